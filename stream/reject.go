package stream

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// RejectionMessage is published on <prefix>.rejected.<model>.
type RejectionMessage struct {
	Schema   int        `json:"schema"`
	Model    string     `json:"model"`
	Reason   string     `json:"reason"`
	Detail   string     `json:"detail"`
	BinStart *time.Time `json:"bin_start,omitempty"`
}

// RejectInput reports a refused input: published with its reason,
// counted by reason, and logged at most limit's rate (a flood of bad
// messages must not flood the log).
func RejectInput(sink Sink, met *Metrics, log zerolog.Logger, limit *rateLimit, model string, m *ObsMessage, rej *Rejection) {
	met.rejected.WithLabelValues(model, rej.Reason).Inc()
	rm := RejectionMessage{Schema: SchemaVersion, Model: model, Reason: rej.Reason, Detail: rej.Detail}
	if m != nil {
		rm.BinStart = m.BinStart
	}
	data, _ := json.Marshal(&rm)
	sink.Reject(model, data)
	if n, ok := limit.allow(); ok {
		ev := log.Warn().Str("reason", rej.Reason).Str("detail", rej.Detail)
		if n > 0 {
			ev = ev.Int("suppressed", n)
		}
		ev.Msg("input rejected")
	}
}

// rateLimit lets through at most n events per period and counts the
// rest, so the next allowed log line can say how many were suppressed.
type rateLimit struct {
	mu         sync.Mutex
	n          int
	period     time.Duration
	start      time.Time
	used       int
	suppressed int
}

func newRateLimit(n int, period time.Duration) *rateLimit { return &rateLimit{n: n, period: period} }

// allow reports whether an event may be logged now, and how many were
// suppressed since the last one that was.
func (r *rateLimit) allow() (suppressed int, ok bool) {
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
