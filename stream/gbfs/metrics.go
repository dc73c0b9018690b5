package gbfs

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the poller's Prometheus metrics (prefix dcgpd_gbfs_,
// labelled by feed).
type Metrics struct {
	polls     *prometheus.CounterVec
	errors    *prometheus.CounterVec
	stations  *prometheus.CounterVec
	published *prometheus.CounterVec
	updated   *prometheus.GaugeVec
	skewed    *prometheus.CounterVec

	publishErrors *prometheus.CounterVec
	superseded    *prometheus.CounterVec
}

// NewMetrics registers the poller's metrics with reg (nil: a private
// registry).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_gbfs_polls_total",
			Help: "Polls of station_status by outcome: published, unchanged (same last_updated), failed (the feed), publish_failed (the daemon did not store the status)."}, []string{"feed", "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_gbfs_feed_errors_total",
			Help: "GBFS files that could not be used, by file and reason."}, []string{"feed", "file", "reason"}),
		stations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_gbfs_station_issues_total",
			Help: "Stations skipped (bad_station, over_capacity, stale_report) or changing state (vanished, not_installed, not_renting, not_returning, no_information), by reason."}, []string{"feed", "reason"}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_gbfs_samples_published_total",
			Help: "Station samples published in status messages."}, []string{"feed"}),
		updated: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dcgpd_gbfs_last_updated_timestamp_seconds",
			Help: "last_updated of the newest station_status published, Unix seconds."}, []string{"feed"}),
		skewed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_gbfs_clock_skew_total",
			Help: "station_status snapshots whose last_updated was more than the max clock skew ahead of the poller's clock (published stamped at the poller's clock)."}, []string{"feed"}),
		publishErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_gbfs_publish_errors_total",
			Help: "Status messages the daemon's JetStream did not store, by reason: no_stream (no stream stores the subject: dcgpd serve not running), timeout, nats."}, []string{"feed", "reason"}),
		superseded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_gbfs_snapshots_superseded_total",
			Help: "Snapshots replaced by a newer one before all their messages were stored."}, []string{"feed"}),
	}
	reg.MustRegister(m.polls, m.errors, m.stations, m.published, m.updated, m.skewed, m.publishErrors, m.superseded)
	return m
}
