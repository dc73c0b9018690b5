package backtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream"
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
	// Demand and DemandVar are the realised demand the runner published
	// with each origin's own estimate (stream.Estimate.Demand),
	// Demand[o][k]; NaN where it published none.
	Demand, DemandVar [][]float64
	// Messages are the filtered messages as published (JSON), one per
	// origin, when Options.Keep is set.
	Messages [][]byte
}

// RunOptions configure Run.
type RunOptions struct {
	// From is the first origin bin recorded (earlier bins only move the
	// filter).
	From int
	// Keep records the published messages' bytes.
	Keep bool
}

// Run feeds every bin of g through a stream.Runner built from m (the
// daemon's per-bin path: assembly, the online step, re-smoothing as m
// configures it, the forecasts) with an in-memory sink, and returns the
// filtered estimates and forecasts for the origins from opts.From on.
// m.Horizon is H; m's products must be g's, in order.
func Run(ctx context.Context, g *Grid, m stream.ModelConfig, opts RunOptions) (*Forecasts, error) {
	c := stream.DefaultConfig()
	c.Snapshot.Dir = "off"
	c.HTTP.Listen = "off"
	c.Models = []stream.ModelConfig{m}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("model configuration: %w", err)
	}
	n := g.Len()
	f := &Forecasts{From: opts.From, H: m.Horizon}
	f.Mean, f.PredVar = make([][][]float64, m.Horizon+1), make([][][]float64, m.Horizon+1)
	for h := range f.Mean {
		f.Mean[h], f.PredVar[h] = nanMatrix(max(0, n-opts.From), len(g.Products)), nanMatrix(max(0, n-opts.From), len(g.Products))
	}
	f.Demand, f.DemandVar = nanMatrix(max(0, n-opts.From), len(g.Products)), nanMatrix(max(0, n-opts.From), len(g.Products))
	if opts.Keep {
		f.Messages = make([][]byte, max(0, n-opts.From))
	}
	sink := &collector{g: g, f: f, want: n, done: make(chan struct{}), keep: opts.Keep}
	r, err := stream.NewRunner(&c, m, sink, zerolog.Nop(), stream.NewMetrics(nil))
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
	for i := 0; i < n; i++ {
		if err := r.Submit(rctx, binMessage(g, m.Name, i), 0, nil); err != nil {
			return nil, err
		}
	}
	end := g.BinStart(n)
	if err := r.Submit(rctx, &stream.ObsMessage{Schema: stream.SchemaVersion, Model: m.Name, Watermark: &end}, 0, nil); err != nil {
		return nil, err
	}
	select {
	case <-sink.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case err := <-runDone:
		return nil, fmt.Errorf("the runner stopped after %d of %d bins: %v", sink.count(), n, err)
	}
	stop()
	<-runDone
	if sink.err != nil {
		return nil, sink.err
	}
	return f, nil
}

// binMessage is bin i of g as the daemon's input message.
func binMessage(g *Grid, model string, i int) *stream.ObsMessage {
	start := g.BinStart(i)
	obs := make([]stream.Observation, len(g.Products))
	for k, p := range g.Products {
		o := stream.Observation{Product: p}
		if u := g.Supply[i][k]; !math.IsInf(u, 1) {
			o.Supply = &u
		}
		if y := g.Y[i][k]; !math.IsNaN(y) {
			c := g.Censored[i][k]
			o.Demand, o.Censored = &y, &c
		}
		obs[k] = o
	}
	return &stream.ObsMessage{Schema: stream.SchemaVersion, Model: model, BinStart: &start, Observations: obs}
}

// collector is the in-memory sink: it decodes every filtered message the
// runner publishes into the forecasts, as a consumer of the daemon's
// output subject would.
type collector struct {
	mu   sync.Mutex
	g    *Grid
	f    *Forecasts
	n    int
	want int
	keep bool
	err  error
	done chan struct{}
}

func (s *collector) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Publish implements stream.Sink.
func (s *collector) Publish(_, _ string, data []byte, done func(error)) {
	defer done(nil)
	var m stream.LatentMessage
	if err := json.Unmarshal(data, &m); err != nil {
		s.fail(fmt.Errorf("decoding a published message: %w", err))
		return
	}
	if m.Kind != stream.KindFiltered {
		return // smoothed revisions are not forecasts
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.g.Index(m.BinStart); ok && i >= s.f.From {
		s.record(i-s.f.From, &m)
		if s.keep {
			s.f.Messages[i-s.f.From] = append([]byte(nil), data...)
		}
	}
	s.n++
	if s.n == s.want {
		close(s.done)
	}
}

// record files origin o's estimate (h = 0), its realised demand and the
// forecasts.
func (s *collector) record(o int, m *stream.LatentMessage) {
	put := func(h int, es []stream.Estimate) {
		if h < 0 || h > s.f.H || len(es) != len(s.g.Products) {
			return
		}
		for k, e := range es {
			s.f.Mean[h][o][k], s.f.PredVar[h][o][k] = e.Mean, e.PredVar
		}
	}
	put(0, m.Estimates)
	if len(m.Estimates) == len(s.g.Products) {
		for k, e := range m.Estimates {
			if e.Demand != nil && e.DemandVar != nil {
				s.f.Demand[o][k], s.f.DemandVar[o][k] = *e.Demand, *e.DemandVar
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
