package gbfs

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backoff is the wait after the n-th failed poll in a row: MinInterval
// doubled n-1 times, at most MaxBackoff, of which the upper half is
// jittered; never below MinInterval.
func (p *Poller) backoff(n int) time.Duration {
	d := p.cfg.MaxBackoff
	if n <= 32 {
		if b := p.cfg.MinInterval << (n - 1); b > 0 && b < d {
			d = b
		}
	}
	j := min(max(p.jitter(), 0), 1)
	return max(d/2+time.Duration(j*float64(d/2)), p.cfg.MinInterval)
}

// maxRetryAfter bounds the seconds read from a Retry-After header (the
// wait itself is bounded by MaxBackoff).
const maxRetryAfter = 1 << 31

// retryAfter reads a Retry-After header: delay seconds or an HTTP date
// (relative to now); ok is false when absent or unreadable.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, maxRetryAfter)) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
