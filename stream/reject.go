package stream

import (
	"encoding/json"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/internal/ratelimit"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// RejectInput reports a refused input: published with its reason,
// counted by reason, and logged at most limit's rate (a flood of bad
// messages must not flood the log).
func RejectInput(sink Sink, met *Metrics, log zerolog.Logger, limit *ratelimit.Limiter, model string, m *wire.ObsMessage, rej *wire.Rejection) {
	met.rejected.WithLabelValues(model, rej.Reason).Inc()
	rm := wire.RejectionMessage{Schema: wire.SchemaVersion, Model: model, Reason: rej.Reason, Detail: rej.Detail}
	if m != nil {
		rm.BinStart = m.BinStart
	}
	data, _ := json.Marshal(&rm)
	sink.Reject(model, data)
	if n, ok := limit.Allow(); ok {
		ev := log.Warn().Str("reason", rej.Reason).Str("detail", rej.Detail)
		if n > 0 {
			ev = ev.Int("suppressed", n)
		}
		ev.Msg("input rejected")
	}
}

// RejectStored reports n stored input messages refused together (input
// for a model this configuration does not have): one rejection message,
// counted n times by its reason, logged at the rejections' shared rate.
func RejectStored(sink Sink, met *Metrics, log zerolog.Logger, model string, n int, rej *wire.Rejection) {
	met.rejected.WithLabelValues(model, rej.Reason).Add(float64(n))
	rm := wire.RejectionMessage{Schema: wire.SchemaVersion, Model: model, Reason: rej.Reason, Detail: rej.Detail}
	data, _ := json.Marshal(&rm)
	sink.Reject(model, data)
	if s, ok := met.rejectLog.Allow(); ok {
		ev := log.Warn().Str("model", model).Str("reason", rej.Reason).Int("messages", n).Str("detail", rej.Detail)
		if s > 0 {
			ev = ev.Int("suppressed", s)
		}
		ev.Msg("input rejected")
	}
}
