package ratelimit

import (
	"sync"
	"time"
)

// Limiter lets through at most n events per period and counts the
// rest, so the next allowed log line can say how many were suppressed.
type Limiter struct {
	mu         sync.Mutex
	n          int
	period     time.Duration
	start      time.Time
	used       int
	suppressed int
}

// New returns a limiter of n events per period.
func New(n int, period time.Duration) *Limiter { return &Limiter{n: n, period: period} }

// Allow reports whether an event may be logged now, and how many were
// suppressed since the last one that was.
func (r *Limiter) Allow() (suppressed int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if now.Sub(r.start) >= r.period {
		r.start, r.used = now, 0
	}
	if r.used >= r.n {
		r.suppressed++
		return 0, false
	}
	r.used++
	s := r.suppressed
	r.suppressed = 0
	return s, true
}
