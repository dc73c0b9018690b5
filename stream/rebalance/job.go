package rebalance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// Publisher sends a system's risk: each message part on the risk
// subject, each station's entry to the risk bucket under key.
type Publisher interface {
	PublishRisk(msgID string, data []byte)
	PutRisk(key string, data []byte)
}

// StationsPerMessage bounds a risk message's stations (a station with
// capacity 80 and horizon 24 is about 2.5 kB of JSON).
const StationsPerMessage = 200

// Entry is a station's value in the risk bucket.
type Entry struct {
	Schema   int         `json:"schema"`
	Name     string      `json:"name"`
	BinStart time.Time   `json:"bin_start"`
	BinEnd   time.Time   `json:"bin_end"`
	Risk     StationRisk `json:"risk"`
}

// Ranked is the newest bin's risks, ranked (for the page).
type Ranked struct {
	Name     string
	BinStart time.Time
	BinEnd   time.Time
	// RiskBins is the risk horizon in bins (RiskMessage.RiskBins).
	RiskBins int
	Stations []StationRisk
	// Restored marks a ranking read back from the risk bucket at start
	// (Job.Restore), not computed by this process.
	Restored bool
}

// usable reports whether any station has a risk.
func (r *Ranked) usable() bool {
	for i := range r.Stations {
		if r.Stations[i].Status == StatusOK {
			return true
		}
	}
	return false
}

// Job is one rebalanced system in the daemon: it takes both models'
// forecasts as their bins close, pairs them by bin, computes every
// station's risk and publishes it. Run it in one goroutine.
type Job struct {
	cfg     Config
	Tracker *Tracker
	risker  *Risker
	pub     Publisher
	log     zerolog.Logger
	met     *Metrics
	in      chan *FlowForecast
	pending map[int64]*pair
	ranked  atomic.Pointer[Ranked]
	usable  atomic.Pointer[Ranked]
}

type pair struct{ pickups, returns *FlowForecast }

// NewJob builds a system's job over stations (both models' products).
func NewJob(cfg Config, stations []string, pub Publisher, met *Metrics, log zerolog.Logger) (*Job, error) {
	tr := NewTracker(cfg, stations)
	rk, err := NewRisker(cfg, tr)
	if err != nil {
		return nil, err
	}
	if met == nil {
		met = NewMetrics(nil)
	}
	return &Job{cfg: cfg, Tracker: tr, risker: rk, pub: pub, met: met, log: log.With().Str("rebalance", cfg.Name).Logger(),
		in: make(chan *FlowForecast, 64), pending: map[int64]*pair{}}, nil
}

// Config returns the job's configuration.
func (j *Job) Config() Config { return j.cfg }

// Ranked returns the newest bin's ranked risks (nil before the first).
func (j *Job) Ranked() *Ranked { return j.ranked.Load() }

// Usable returns the newest bin's ranked risks in which at least one
// station has a risk (nil before the first): what the page shows when
// the status feed goes stale or silent and later bins have none.
func (j *Job) Usable() *Ranked { return j.usable.Load() }

// Ingest stores a status message and counts its samples.
func (j *Job) Ingest(m *stationstatus.Message) IngestResult {
	res := j.Tracker.Ingest(m)
	j.met.samples.WithLabelValues(j.cfg.Name, "kept").Add(float64(res.Kept - res.Stale))
	j.met.samples.WithLabelValues(j.cfg.Name, "stale").Add(float64(res.Stale))
	j.met.samples.WithLabelValues(j.cfg.Name, "ignored").Add(float64(res.Ignored))
	return res
}

// Censor applies the status to a closing bin of one of the two models
// and counts the outcome.
func (j *Job) Censor(model string, names []string, obs []cvi.Obs, start, end time.Time) {
	flow := Pickups
	if model == j.cfg.Returns {
		flow = Returns
	}
	res := j.Tracker.Censor(flow, names, obs, start, end)
	j.met.censoring.WithLabelValues(j.cfg.Name, flow.String(), "censored").Add(float64(res.Censored))
	j.met.censoring.WithLabelValues(j.cfg.Name, flow.String(), "uncensored").Add(float64(res.Uncensored))
	j.met.censoring.WithLabelValues(j.cfg.Name, flow.String(), "unknown").Add(float64(res.Unknown))
}

// Offer hands a model's closed bin to the job; it waits while the job is
// behind (back-pressure on the model) or until ctx ends.
func (j *Job) Offer(ctx context.Context, f *FlowForecast) error {
	select {
	case j.in <- f:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run pairs and computes until ctx ends.
func (j *Job) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case f := <-j.in:
			j.Take(ctx, f)
		}
	}
}

// maxPending bounds the bins waiting for the other model.
const maxPending = 256

// Take files one model's bin and computes and publishes the risk once
// both models have it; bins older than a completed one that never paired
// are counted and dropped. Run calls it for each offered bin; call it
// directly only when Run is not running. When ctx ends during the risk
// step, the bin is not published.
func (j *Job) Take(ctx context.Context, f *FlowForecast) {
	key := f.BinStart.Unix()
	p := j.pending[key]
	if p == nil {
		p = &pair{}
		j.pending[key] = p
	}
	if f.Model == j.cfg.Pickups {
		p.pickups = f
	} else {
		p.returns = f
	}
	if p.pickups == nil || p.returns == nil {
		if len(j.pending) > maxPending {
			j.dropBefore(key + 1)
		}
		return
	}
	delete(j.pending, key)
	j.dropBefore(key)
	j.compute(ctx, p)
}

func (j *Job) dropBefore(key int64) {
	for k := range j.pending {
		if k < key {
			delete(j.pending, k)
			j.met.unpaired.WithLabelValues(j.cfg.Name).Inc()
		}
	}
}

// compute publishes one bin's risk.
func (j *Job) compute(ctx context.Context, p *pair) {
	began := time.Now()
	ranked, err := j.risker.Compute(ctx, p.pickups, p.returns)
	if err != nil {
		if ctx.Err() != nil {
			// Stopping mid-bin: said, since the bin's risk is then never
			// published.
			j.log.Warn().Err(err).Time("bin_start", p.pickups.BinStart).Msg("stopping: this bin's risk is not published")
			return
		}
		j.log.Error().Err(err).Time("bin_start", p.pickups.BinStart).Msg("risk not computed")
		return
	}
	j.met.seconds.WithLabelValues(j.cfg.Name).Observe(time.Since(began).Seconds())
	for i := range ranked {
		j.met.stations.WithLabelValues(j.cfg.Name, ranked[i].Status).Inc()
	}
	for _, m := range j.risker.Messages(p.pickups, ranked, StationsPerMessage) {
		data, err := m.Marshal()
		if err != nil {
			j.log.Error().Err(err).Msg("risk message not encoded")
			continue
		}
		j.pub.PublishRisk(m.MsgID(), data)
	}
	for i := range ranked {
		e := Entry{Schema: SchemaVersion, Name: j.cfg.Name, BinStart: p.pickups.BinStart.UTC(), BinEnd: p.pickups.BinEnd.UTC(), Risk: ranked[i]}
		data, err := json.Marshal(&e)
		if err != nil {
			continue
		}
		j.pub.PutRisk(Key(j.cfg.Name, ranked[i].Station), data)
	}
	rk := &Ranked{Name: j.cfg.Name, BinStart: p.pickups.BinStart, BinEnd: p.pickups.BinEnd,
		RiskBins: j.risker.RiskBins(p.pickups, min(len(p.pickups.Mean), len(p.returns.Mean))), Stations: ranked}
	j.ranked.Store(rk)
	if rk.usable() {
		j.usable.Store(rk)
	}
}

// Key is a station's key in the risk bucket: <name>.<station>, every
// byte of the station id outside [A-Za-z0-9_-] written as =XX (hex).
func Key(name, station string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('.')
	for i := 0; i < len(station); i++ {
		c := station[i]
		if c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "=%02X", c)
		}
	}
	return b.String()
}

// Metrics are a rebalanced system's metrics (prefix
// dcgpd_rebalance_, labelled by name).
type Metrics struct {
	samples, censoring, stations, unpaired *prometheus.CounterVec
	seconds                                *prometheus.HistogramVec
}

// NewMetrics registers the metrics with reg (nil: a private registry).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_rebalance_status_samples_total",
			Help: "Station status samples by outcome: kept, stale (no evidence), ignored (no model has the station)."}, []string{"name", "outcome"}),
		censoring: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_rebalance_censoring_total",
			Help: "Observed bins by what the status said: censored, uncensored, unknown (samples covered too little)."}, []string{"name", "flow", "outcome"}),
		stations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_rebalance_risk_stations_total",
			Help: "Stations in published risk messages, by status."}, []string{"name", "status"}),
		unpaired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_rebalance_unpaired_bins_total",
			Help: "Bins one model closed that the other never did (no risk published for them)."}, []string{"name"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dcgpd_rebalance_risk_seconds",
			Help: "Risk of every station for one bin.", Buckets: prometheus.ExponentialBuckets(1e-4, 4, 10)}, []string{"name"}),
	}
	reg.MustRegister(m.samples, m.censoring, m.stations, m.unpaired, m.seconds)
	return m
}
