package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcgpd/dcgpd/stream/feedflow"
)

// feedMetrics count what the in-process feeds derive, labelled by the
// [[rebalance]] entry's name.
type feedMetrics struct {
	bins    *prometheus.CounterVec // {name, outcome}: observed, censored_below, unobserved
	refused *prometheus.CounterVec // {name, reason}: samples statusflow refused
	unsent  *prometheus.CounterVec // {name}: derived messages not stored
	zeros   *prometheus.CounterVec // {name}: flow-bins of 0 censored from below, not sent
}

func newFeedMetrics(reg prometheus.Registerer) *feedMetrics {
	m := &feedMetrics{
		bins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_feed_flow_bins_total",
			Help: "Station-bins derived from an in-process GBFS feed, by outcome (observed: sent as counts; censored_below: sent censored at the count; unobserved: not sent)."},
			[]string{"name", "outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_feed_flow_samples_refused_total",
			Help: "Status samples the flow derivation refused, by reason (late: reported more than one poll after a later snapshot)."},
			[]string{"name", "reason"}),
		unsent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_feed_flow_unsent_total",
			Help: "Derived observation or watermark messages JetStream did not store."}, []string{"name"}),
		zeros: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_feed_flow_zero_bounds_total",
			Help: "Derived flow-bins of 0 censored from below, not sent: demand >= 0 says nothing, and a diffusion model would read them as stock-outs."},
			[]string{"name"}),
	}
	reg.MustRegister(m.bins, m.refused, m.unsent, m.zeros)
	return m
}

// add counts the change from prev to cur of an entry's derivation.
func (m *feedMetrics) add(name string, prev, cur feedflow.Stats) {
	m.bins.WithLabelValues(name, "observed").Add(float64((cur.Observed - cur.Censored) - (prev.Observed - prev.Censored)))
	m.bins.WithLabelValues(name, "censored_below").Add(float64(cur.Censored - prev.Censored))
	m.bins.WithLabelValues(name, "unobserved").Add(float64((cur.Bins - cur.Observed) - (prev.Bins - prev.Observed)))
	m.zeros.WithLabelValues(name).Add(float64(cur.ZeroBounds - prev.ZeroBounds))
	for reason, n := range cur.Refused {
		if d := n - prev.Refused[reason]; d > 0 {
			m.refused.WithLabelValues(name, reason).Add(float64(d))
		}
	}
}
