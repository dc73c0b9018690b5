package evsupply

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcgpd/dcgpd/cvi"
)

// CensorResult counts what Censor did to a bin's observations.
type CensorResult struct {
	// Censored: served counts the status made censored; Emptied: full
	// bins that served nobody, sent on as no observation with supply 0;
	// Uncensored: given the status's supply; Unknown: the polls covered
	// too little of the bin (left as sent).
	Censored, Emptied, Uncensored, Unknown int
}

// Censor applies the status to one bin's observations (obs[i] is site
// names[i]). Sites without an observation are left alone; censoring the
// sender gave is kept; nothing is uncensored.
func (t *Tracker) Censor(names []string, obs []cvi.Obs, start, end time.Time) CensorResult {
	var res CensorResult
	for i := range obs {
		o := &obs[i]
		if math.IsNaN(o.Y) {
			continue
		}
		b := t.Supply(names[i], start, end)
		switch {
		case !b.Known:
			res.Unknown++
		case b.Full > t.cfg.CensorFraction && o.Y <= 0:
			res.Emptied++
			*o = cvi.Obs{Y: math.NaN(), Supply: 0, Level: o.Level}
		case b.Full > t.cfg.CensorFraction:
			res.Censored++
			o.Censored = true
			if !(o.Supply <= o.Y) {
				o.Supply = o.Y
			}
		case o.Censored:
			res.Uncensored++
		default:
			res.Uncensored++
			o.Supply = math.Min(o.Supply, math.Max(float64(b.Supply), o.Y))
		}
	}
	return res
}

// Metrics count statuses by outcome and observed bins by what their
// status said.
type Metrics struct {
	statuses, censoring *prometheus.CounterVec
}

// NewMetrics registers dcgpd_charging_status_messages_total{model,outcome}
// and dcgpd_charging_censoring_total{model,outcome} with reg (nil: a
// private registry).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		statuses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_charging_status_messages_total",
			Help: "EVSE status messages taken in, by outcome: kept, poll (a poll marker), ignored (a site the model does not have)."}, []string{"model", "outcome"}),
		censoring: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_charging_censoring_total",
			Help: "Observed site-bins by what the EVSE status said: censored, emptied (full, nobody served), uncensored, unknown (polls covered too little)."}, []string{"model", "outcome"}),
	}
	reg.MustRegister(m.statuses, m.censoring)
	return m
}

// Status counts one ingested message's outcome.
func (m *Metrics) Status(model, outcome string) { m.statuses.WithLabelValues(model, outcome).Inc() }

// Censoring adds one bin's CensorResult.
func (m *Metrics) Censoring(model string, r CensorResult) {
	for _, c := range []struct {
		outcome string
		n       int
	}{{"censored", r.Censored}, {"emptied", r.Emptied}, {"uncensored", r.Uncensored}, {"unknown", r.Unknown}} {
		if c.n > 0 {
			m.censoring.WithLabelValues(model, c.outcome).Add(float64(c.n))
		}
	}
}
