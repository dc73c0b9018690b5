package daemon

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcgpd/dcgpd/stream/natsio"
)

// countDuplicates tells the publisher when an output may rightly be a
// duplicate (duplicateExpected) and exports its counts as
// dcgpd_output_duplicates_total{expected}.
func (d *Daemon) countDuplicates(pub *natsio.Publisher) {
	pub.ExpectDuplicates(d.duplicateExpected)
	for _, expected := range []bool{true, false} {
		d.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dcgpd_output_duplicates_total",
			Help: "Outputs the server did not store again as duplicates of ones it holds: expected (a replay of input " +
				"processed before a restart, or an output sent again) or not (another process publishes the model, logged)",
			ConstLabels: prometheus.Labels{"expected": map[bool]string{true: "true", false: "false"}[expected]}},
			func() float64 {
				e, u := pub.Duplicates()
				if expected {
					return float64(e)
				}
				return float64(u)
			}))
	}
}

// duplicateExpected says whether an output on subject, published now,
// may be a duplicate: an estimate of a model still replaying input that
// was in the stream when its consumer was bound (its predecessor may have
// published it), or any other output (risk, turned-away), whose replays
// follow their models'.
func (d *Daemon) duplicateExpected(subject string) bool {
	model, ok := strings.CutPrefix(subject, d.cfg.NATS.Prefix+".latent.")
	if !ok {
		return true
	}
	r := d.Runner(model)
	end, bound := d.replayEnd.Load(model)
	if r == nil || !bound {
		return true
	}
	return r.Applied() <= end.(uint64)
}
