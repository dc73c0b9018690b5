package stream

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcgpd/dcgpd/internal/ratelimit"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// Metrics are the daemon's Prometheus metrics (prefix dcgpd_, base units,
// labelled by model, never by product).
type Metrics struct {
	bins        *prometheus.CounterVec
	accepted    *prometheus.CounterVec
	rejected    *prometheus.CounterVec
	late        *prometheus.CounterVec
	duplicates  *prometheus.CounterVec
	unconverged *prometheus.CounterVec
	openBins    *prometheus.GaugeVec
	lastBin     *prometheus.GaugeVec
	pending     *prometheus.GaugeVec
	binCompute  *prometheus.HistogramVec
	latency     prometheus.Histogram
	resmooth    *prometheus.HistogramVec
	resmoothOut *prometheus.CounterVec
	redelivered *prometheus.CounterVec
	waits       *prometheus.CounterVec
	snapshots   *prometheus.CounterVec
	snapSeconds *prometheus.HistogramVec
	snapBytes   *prometheus.GaugeVec
	snapRefused *prometheus.CounterVec
	restore     *prometheus.GaugeVec
	// rejectLog limits rejection log lines across all models.
	rejectLog *ratelimit.Limiter
}

// NewMetrics registers the daemon's metrics with reg (nil: a private
// registry).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	model := []string{"model"}
	m := &Metrics{
		bins:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_bins_processed_total", Help: "Bins closed and processed by the online step."}, model),
		accepted:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_observations_accepted_total", Help: "Observations accepted into an open bin."}, model),
		rejected:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_observations_rejected_total", Help: "Input refused, by reason."}, []string{"model", "reason"}),
		late:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_observations_late_total", Help: "Observations for bins that had closed."}, model),
		duplicates:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_observations_duplicate_total", Help: "Identical repeats of an observation (idempotent)."}, model),
		unconverged: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_online_unconverged_bins_total", Help: "Bins whose local CVI refinement hit its step limit."}, model),
		openBins:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dcgpd_open_bins", Help: "Bins waiting for data."}, model),
		lastBin:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dcgpd_last_bin_timestamp_seconds", Help: "Start of the last processed bin, Unix seconds."}, model),
		pending:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dcgpd_consumer_pending_messages", Help: "Input messages the server holds for the model's consumer."}, model),
		binCompute:  prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dcgpd_bin_compute_seconds", Help: "Online step per bin: predict, local CVI, update, forecasts.", Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12)}, model),
		latency:     prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dcgpd_ingest_to_publish_seconds", Help: "From a bin's last accepted input to its estimate being stored by the server.", Buckets: prometheus.ExponentialBuckets(1e-4, 2, 16)}),
		resmooth:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dcgpd_resmooth_seconds", Help: "Background re-smooth (and re-learn) duration.", Buckets: prometheus.ExponentialBuckets(1e-3, 4, 10)}, model),
		resmoothOut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_resmooth_total", Help: "Re-smooths by outcome: swapped, kept_hyperparameters (re-learn rejected), failed, abandoned (past max_wait at its bin), cancelled (stopped with its runner; the snapshot holds the job)."}, []string{"model", "outcome"}),
		redelivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_input_redelivered_total", Help: "Input messages skipped because the state already holds them (redeliveries after a restart)."}, model),
		waits:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_resmooth_waits_total", Help: "Times ingest waited for a re-smooth due at a bin to finish."}, model),
		snapshots:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_snapshots_total", Help: "Snapshot writes by outcome: written, failed."}, []string{"model", "outcome"}),
		snapSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dcgpd_snapshot_seconds", Help: "Snapshot write time, including waiting for outputs to be stored.", Buckets: prometheus.ExponentialBuckets(1e-4, 4, 10)}, model),
		snapBytes:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dcgpd_snapshot_bytes", Help: "Size of the last snapshot written."}, model),
		snapRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_snapshots_refused_total", Help: "Snapshot files refused at restore (corrupt, truncated or another version)."}, model),
		restore:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dcgpd_restore_seconds", Help: "Time the last restore from a snapshot took."}, model),
	}
	m.rejectLog = ratelimit.New(20, time.Minute)
	reg.MustRegister(buildInfoGauge(wire.ReadBuild()))
	reg.MustRegister(m.bins, m.accepted, m.rejected, m.late, m.duplicates, m.unconverged, m.openBins, m.lastBin,
		m.pending, m.binCompute, m.latency, m.resmooth, m.resmoothOut, m.redelivered, m.waits, m.snapshots,
		m.snapSeconds, m.snapBytes, m.snapRefused, m.restore)
	return m
}

// modelMetrics are one model's children of the metric vectors.
type modelMetrics struct {
	parent                                        *Metrics
	bins, accepted, late, duplicates, unconverged prometheus.Counter
	openBins, lastBin                             prometheus.Gauge
	binCompute, resmooth                          prometheus.Observer
	redelivered, resmoothWaits, snapshotRefused   prometheus.Counter
	snapshots                                     *prometheus.CounterVec
	snapshotSeconds                               prometheus.Observer
	snapshotBytes, restoreSeconds                 prometheus.Gauge
}

func (m *Metrics) forModel(name string) *modelMetrics {
	return &modelMetrics{parent: m, bins: m.bins.WithLabelValues(name), accepted: m.accepted.WithLabelValues(name),
		late: m.late.WithLabelValues(name), duplicates: m.duplicates.WithLabelValues(name),
		unconverged: m.unconverged.WithLabelValues(name), openBins: m.openBins.WithLabelValues(name),
		lastBin: m.lastBin.WithLabelValues(name), binCompute: m.binCompute.WithLabelValues(name),
		resmooth: m.resmooth.WithLabelValues(name), redelivered: m.redelivered.WithLabelValues(name),
		resmoothWaits: m.waits.WithLabelValues(name), snapshotRefused: m.snapRefused.WithLabelValues(name),
		snapshots: m.snapshots, snapshotSeconds: m.snapSeconds.WithLabelValues(name),
		snapshotBytes: m.snapBytes.WithLabelValues(name), restoreSeconds: m.restore.WithLabelValues(name)}
}

// buildInfoGauge is dcgpd_build_info: constant 1, labelled with the build.
func buildInfoGauge(b wire.Build) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "dcgpd_build_info",
		Help:        "The running build: constant 1 labelled by module version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "go_version": b.GoVersion}})
	g.Set(1)
	return g
}

// SetPending records a model's input backlog: messages not yet delivered
// plus those delivered and not yet acknowledged.
func (m *Metrics) SetPending(model string, n uint64) {
	m.pending.WithLabelValues(model).Set(float64(n))
}
