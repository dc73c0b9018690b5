package backtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// Forecasts holds what the runner published for every origin bin from
// From on: Mean[h][o][k], PredVar[h][o][k] for horizon h (0: the filtered
// estimate of the origin bin itself), origin From+o, product k. NaN where
// the runner published the bin as missing.
type Forecasts struct {
	From    int
	H       int
	Mean    [][][]float64
	PredVar [][][]float64
	// Var is the latent demand's variance (stream.Estimate.Var).
	Var [][][]float64
	// Demand and DemandVar are the realised demand the runner published
	// with each origin's own estimate (stream.Estimate.Demand),
	// Demand[o][k]; NaN where it published none.
	Demand, DemandVar [][]float64
	// Messages are the filtered messages as published (JSON), one per
	// origin, when Options.Keep is set.
	Messages [][]byte
	// Resmooths counts the runner's re-smooths by outcome (its
	// dcgpd_resmooth_total: swapped, kept_hyperparameters, failed,
	// abandoned); ResmoothTime is their total duration.
	Resmooths    map[string]int
	ResmoothTime time.Duration
}

// RunOptions configure Run.
type RunOptions struct {
	// From is the first origin bin recorded in the returned Forecasts
	// (earlier bins only move the filter).
	From int
	// Start is the first bin streamed (the runner starts there from its
	// prior, as a daemon started then would); at most From.
	Start int
	// Keep records the published messages' bytes.
	Keep bool
	// score, if not nil, scores every origin from scoreFrom on as it is
	// published (Options.Run: nothing scored is kept).
	score     *scorer
	scoreFrom int
}

// Run feeds every bin of g through a stream.Runner built from m (the
// daemon's per-bin path: assembly, the online step, re-smoothing as m
// configures it, the forecasts) with an in-memory sink, and returns the
// filtered estimates and forecasts for the origins from opts.From on.
// m.Horizon is H; m's products must be g's, in order.
func Run(ctx context.Context, g *Grid, m config.ModelConfig, opts RunOptions) (*Forecasts, error) {
	c := config.DefaultConfig()
	c.Snapshot.Dir = "off"
	c.HTTP.Listen = "off"
	c.Models = []config.ModelConfig{m}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("model configuration: %w", err)
	}
	n := g.Len()
	f := &Forecasts{From: opts.From, H: m.Horizon}
	f.Mean, f.PredVar, f.Var = make([][][]float64, m.Horizon+1), make([][][]float64, m.Horizon+1), make([][][]float64, m.Horizon+1)
	for h := range f.Mean {
		f.Mean[h], f.PredVar[h] = nanMatrix(max(0, n-opts.From), len(g.Products)), nanMatrix(max(0, n-opts.From), len(g.Products))
		f.Var[h] = nanMatrix(max(0, n-opts.From), len(g.Products))
	}
	f.Demand, f.DemandVar = nanMatrix(max(0, n-opts.From), len(g.Products)), nanMatrix(max(0, n-opts.From), len(g.Products))
	if opts.Keep {
		f.Messages = make([][]byte, max(0, n-opts.From))
	}
	if opts.Start < 0 || opts.Start > opts.From {
		return nil, fmt.Errorf("the first bin streamed (%d) is not in 0..%d, the first recorded", opts.Start, opts.From)
	}
	sink := &collector{g: g, f: f, want: n - opts.Start, done: make(chan struct{}), keep: opts.Keep, score: opts.score, scoreFrom: opts.scoreFrom,
		pub: newPublished(m.Horizon, len(g.Products))}
	reg := prometheus.NewRegistry()
	r, err := stream.NewRunner(&c, m, sink, zerolog.Nop(), stream.NewMetrics(reg))
	if err != nil {
		return nil, err
	}
	if got := r.Products(); len(got) != len(g.Products) {
		return nil, fmt.Errorf("the model has %d products, the data %d", len(got), len(g.Products))
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run(rctx) }()
	for i := opts.Start; i < n; i++ {
		if err := r.Submit(rctx, binMessage(g, m.Name, i), 0, nil); err != nil {
			return nil, err
		}
	}
	end := g.BinStart(n)
	if err := r.Submit(rctx, &wire.ObsMessage{Schema: wire.SchemaVersion, Model: m.Name, Watermark: &end}, 0, nil); err != nil {
		return nil, err
	}
	select {
	case <-sink.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case err := <-runDone:
		return nil, fmt.Errorf("the runner stopped after %d of %d bins: %v", sink.count(), n-opts.Start, err)
	}
	stop()
	<-runDone
	if sink.err != nil {
		return nil, sink.err
	}
	f.Resmooths, f.ResmoothTime = resmoothMetrics(reg)
	return f, nil
}

// resmoothMetrics reads the re-smooths' outcomes and total duration from
// the runner's metrics.
func resmoothMetrics(reg *prometheus.Registry) (map[string]int, time.Duration) {
	out := map[string]int{}
	var secs float64
	fams, _ := reg.Gather() // a fresh registry of the runner's own metrics
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			switch fam.GetName() {
			case "dcgpd_resmooth_total":
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" {
						out[l.GetValue()] += int(m.GetCounter().GetValue())
					}
				}
			case "dcgpd_resmooth_seconds":
				secs += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out, time.Duration(secs * float64(time.Second))
}

// binMessage is bin i of g as the daemon's input message.
func binMessage(g *Grid, model string, i int) *wire.ObsMessage {
	start := g.BinStart(i)
	obs := make([]wire.Observation, len(g.Products))
	for k, p := range g.Products {
		o := wire.Observation{Product: p}
		if u := g.Supply[i][k]; !math.IsInf(u, 1) {
			o.Supply = &u
		}
		if y := g.Y[i][k]; !math.IsNaN(y) {
			c := g.Censored[i][k]
			o.Demand, o.Censored = &y, &c
		}
		obs[k] = o
	}
	return &wire.ObsMessage{Schema: wire.SchemaVersion, Model: model, BinStart: &start, Observations: obs}
}

// collector is the in-memory sink: it decodes every filtered message the
// runner publishes, as a consumer of the daemon's output subject would,
// into the forecasts it records and into the scorer.
type collector struct {
	mu   sync.Mutex
	g    *Grid
	f    *Forecasts
	n    int
	want int
	keep bool
	err  error
	done chan struct{}
	// score scores the origins from scoreFrom on through pub (reused).
	score     *scorer
	scoreFrom int
	pub       *published
}

func (s *collector) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Publish implements stream.Sink.
func (s *collector) Publish(_, _ string, data []byte, done func(error)) {
	defer done(nil)
	var m wire.LatentMessage
	if err := json.Unmarshal(data, &m); err != nil {
		s.fail(fmt.Errorf("decoding a published message: %w", err))
		return
	}
	if m.Kind != wire.KindFiltered {
		return // smoothed revisions are not forecasts
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.g.Index(m.BinStart); ok && (i >= s.f.From || s.score != nil && i >= s.scoreFrom) {
		s.pub.fill(&m, len(s.g.Products))
		if i >= s.f.From {
			s.record(i - s.f.From)
			if s.keep {
				s.f.Messages[i-s.f.From] = append([]byte(nil), data...)
			}
		}
		if s.score != nil && i >= s.scoreFrom {
			s.score.origin(i, s.pub)
		}
	}
	s.n++
	if s.n == s.want {
		close(s.done)
	}
}

// record files origin o's published numbers (s.pub): its estimate
// (h = 0), its realised demand and its forecasts.
func (s *collector) record(o int) {
	for h := range s.f.Mean {
		copy(s.f.Mean[h][o], s.pub.mean[h])
		copy(s.f.PredVar[h][o], s.pub.vars[h])
		copy(s.f.Var[h][o], s.pub.lvar[h])
	}
	copy(s.f.Demand[o], s.pub.demand)
	copy(s.f.DemandVar[o], s.pub.demandVar)
}

// newPublished allocates one origin's numbers for H horizons and np
// products.
func newPublished(H, np int) *published {
	return &published{mean: nanMatrix(H+1, np), vars: nanMatrix(H+1, np), lvar: nanMatrix(H+1, np), demand: make([]float64, np), demandVar: make([]float64, np)}
}

// fill sets p from a filtered message (NaN where it has no value).
func (p *published) fill(m *wire.LatentMessage, np int) {
	for h := range p.mean {
		for k := range p.mean[h] {
			p.mean[h][k], p.vars[h][k], p.lvar[h][k] = math.NaN(), math.NaN(), math.NaN()
		}
	}
	for k := range p.demand {
		p.demand[k], p.demandVar[k] = math.NaN(), math.NaN()
	}
	put := func(h int, es []wire.Estimate) {
		if h < 0 || h >= len(p.mean) || len(es) != np {
			return
		}
		for k, e := range es {
			p.mean[h][k], p.vars[h][k], p.lvar[h][k] = e.Mean, e.PredVar, e.Var
		}
	}
	put(0, m.Estimates)
	if len(m.Estimates) == np {
		for k, e := range m.Estimates {
			if e.Demand != nil && e.DemandVar != nil {
				p.demand[k], p.demandVar[k] = *e.Demand, *e.DemandVar
			}
		}
	}
	for _, fc := range m.Forecasts {
		put(fc.Horizon, fc.Estimates)
	}
}

func (s *collector) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// Latest implements stream.Sink (unused: no key-value bucket).
func (s *collector) Latest(string, []byte) {}

// Reject implements stream.Sink: a refused input is an error here, the
// grid was built to be valid.
func (s *collector) Reject(_ string, data []byte) {
	s.fail(fmt.Errorf("the runner refused an input: %s", data))
}

var _ stream.Sink = (*collector)(nil)

// binsPer is how many bins of width fit in d (0 if not a whole number).
func binsPer(d, width time.Duration) int {
	if width <= 0 || d%width != 0 {
		return 0
	}
	return int(d / width)
}
