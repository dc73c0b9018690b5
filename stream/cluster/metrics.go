package cluster

import "github.com/prometheus/client_golang/prometheus"

// clusterMetrics are cluster mode's ownership metrics.
type clusterMetrics struct {
	owned     prometheus.Gauge
	renewals  *prometheus.CounterVec
	handovers *prometheus.CounterVec
	takeover  prometheus.Histogram
}

func newClusterMetrics(reg prometheus.Registerer) *clusterMetrics {
	m := &clusterMetrics{
		owned: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dcgpd_cluster_models_owned", Help: "Models whose lease this instance holds."}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_cluster_lease_renewals_total",
			Help: "Lease renewals by result: ok, failed (a failure past the local deadline or to another owner drops the model)."}, []string{"result"}),
		handovers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_cluster_handovers_total",
			Help: "Ownership changes of this instance: acquired, released (clean handover: snapshot, release), lost (lease expired or fenced), failed (won but not started: lease released)."}, []string{"kind"}),
		takeover: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dcgpd_cluster_takeover_seconds",
			Help: "From winning a model's lease to its input consumer bound: fence, restore from the JetStream snapshot, claim.", Buckets: prometheus.ExponentialBuckets(1e-3, 2, 16)}),
	}
	reg.MustRegister(m.owned, m.renewals, m.handovers, m.takeover)
	return m
}
