package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// likSink records every output with the noise variance of the runner's
// likelihood at the moment it was published.
type likSink struct {
	mu   sync.Mutex
	r    *Runner
	outs []likOut
}

type likOut struct {
	data []byte
	lik  cvi.Likelihood // the runner's when it was published
}

func (s *likSink) Publish(_, _ string, data []byte, done func(error)) {
	s.mu.Lock()
	s.outs = append(s.outs, likOut{data: append([]byte(nil), data...), lik: s.r.built.Lik})
	s.mu.Unlock()
	done(nil)
}
func (s *likSink) Latest(string, []byte) {}
func (s *likSink) Reject(string, []byte) {}

// relearnFeed is one message per hourly bin, each product observed with
// noise of variance 4 (the model starts at 1.5), product p1 censored every
// third bin, about one cell in ten missing; no late or repeated input, so
// that the feed is the bins' observations exactly.
func relearnFeed(n int, origin time.Time) []*wire.ObsMessage {
	rng := rand.New(rand.NewPCG(31, 37))
	out := make([]*wire.ObsMessage, 0, n)
	for b := 0; b < n; b++ {
		start := origin.Add(time.Duration(b) * time.Hour)
		m := &wire.ObsMessage{Schema: wire.SchemaVersion, Model: "city", BinStart: &start}
		for k := 0; k < 4; k++ {
			if rng.IntN(10) == 0 {
				continue
			}
			d := math.Max(0, 6+3*math.Sin(float64(b)/4)+2*rng.NormFloat64())
			o := wire.Observation{Product: fmt.Sprintf("p%d", k), Demand: &d}
			if k == 1 && b%3 == 0 {
				s := math.Floor(d * 0.6)
				o.Demand, o.Supply = &s, &s
			}
			m.Observations = append(m.Observations, o)
		}
		out = append(out, m)
	}
	return out
}

// TestSmoothedRevisionUsesJobLikelihood: a re-smooth that re-learns
// publishes its smoothed revision with its own likelihood, the one its
// smoothing used: pred_var = var + the job's noise variance at the cell's
// level and the realised demand under the job's likelihood
// (cvi.RealisedDemand on the feed's observations), to 1e-12, though the
// runner's likelihood is still the old one when they are published.
// Filtered bins and their forecasts use the runner's likelihood of their
// bin (the old one before the swap, the job's after it). The re-learned
// noise differs from the runner's by more than 10% for most published
// bins, so a revision published with the old one fails. Also with
// level-dependent noise (σ² + c·level, both re-learned) over a prior mean.
func TestSmoothedRevisionUsesJobLikelihood(t *testing.T) {
	for _, tc := range []struct {
		lik        string
		levelNoise bool
	}{{"tobit", false}, {"diffusion", false}, {"tobit", true}, {"diffusion", true}} {
		t.Run(fmt.Sprintf("%s,level_noise=%v", tc.lik, tc.levelNoise), func(t *testing.T) {
			c, m := restoreConfig(true)
			m.Model.Likelihood = tc.lik
			m.Late = "drop"
			c.Models = []config.ModelConfig{m}
			if tc.levelNoise {
				m.Model.LevelNoise = true
				m = withMean(c, m)
			}
			sink := &likSink{}
			r, err := NewRunner(c, m, sink, zerolog.Nop(), NewMetrics(nil))
			if err != nil {
				t.Fatal(err)
			}
			sink.r = r
			r.store = nil // snapshots off: restoreConfig's directory is a placeholder
			feed := relearnFeed(40, m.Origin)
			obs := map[time.Time][]cvi.Obs{}
			for _, msg := range feed {
				row := make([]cvi.Obs, 4)
				for k := range row {
					row[k] = cvi.Obs{Y: math.NaN(), Supply: math.Inf(1)}
				}
				for _, o := range msg.Observations {
					var k int
					_, _ = fmt.Sscanf(o.Product, "p%d", &k)
					row[k] = toObs(o)
				}
				obs[msg.BinStart.UTC()] = row
			}
			// The likelihood each revision installs, captured at its swap:
			// the job's own (each job re-learns on a clone).
			initial := r.built.Lik.NoiseVariance()
			jobLik := map[int]cvi.Likelihood{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i, msg := range feed {
				r.handle(ctx, input{msg: msg, seq: uint64(i + 1), at: *msg.BinStart})
				if _, ok := jobLik[r.revision]; !ok && r.revision > 0 {
					jobLik[r.revision] = r.built.Lik
				}
			}
			checkLikOutputs(t, r.built.Boundary(), sink.outs, jobLik, obs, initial)
		})
	}
}

// checkLikOutputs asserts each output's pred_var and demand against the
// likelihood it must use (see TestSmoothedRevisionUsesJobLikelihood).
func checkLikOutputs(t *testing.T, cells spec.Boundary, outs []likOut, jobLik map[int]cvi.Likelihood, obs map[time.Time][]cvi.Obs, initial float64) {
	t.Helper()
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
	moved, smoothed, demands, filtered := 0, 0, 0, 0
	for _, o := range outs {
		var msg wire.LatentMessage
		if err := json.Unmarshal(o.data, &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Missing != "" {
			t.Fatalf("%s %s: missing: %s", msg.Kind, msg.BinStart, msg.Missing)
		}
		if msg.Kind != wire.KindSmoothed {
			// The online path: the runner's likelihood of the moment.
			checkPredVar(t, cells, "filtered", msg.BinStart, msg.Estimates, o.lik)
			for _, f := range msg.Forecasts {
				checkPredVar(t, cells, fmt.Sprintf("forecast h=%d of %s", f.Horizon, msg.BinStart), f.BinStart, f.Estimates, o.lik)
			}
			filtered++
			continue
		}
		lik := jobLik[msg.Revision]
		if lik == nil {
			t.Fatalf("smoothed revision %d of %s was never swapped in", msg.Revision, msg.BinStart)
		}
		if now := o.lik.NoiseVariance(); math.Abs(lik.NoiseVariance()-now) > 0.1*now {
			moved++
		}
		where := fmt.Sprintf("smoothed revision %d", msg.Revision)
		checkPredVar(t, cells, where, msg.BinStart, msg.Estimates, lik)
		// The realised demand from the feed's observations, independently
		// of the runner: the prior mean taken off and added back.
		tm := ModelTime(msg.BinStart.Unix())
		row := append([]cvi.Obs(nil), obs[msg.BinStart.UTC()]...)
		cells.Prepare(tm, row)
		mean, vars := make([]float64, len(msg.Estimates)), make([]float64, len(msg.Estimates))
		for k, e := range msg.Estimates {
			mean[k], vars[k] = e.Mean-cells.MeanAt(tm, k), e.Var
		}
		dm, dv := make([]float64, len(mean)), make([]float64, len(mean))
		if err := cvi.RealisedDemand(lik, row, mean, vars, dm, dv); err != nil {
			t.Fatal(err)
		}
		for k, e := range msg.Estimates {
			if e.Demand == nil || e.DemandVar == nil {
				t.Fatalf("%s %s %s: no realised demand", where, msg.BinStart, e.Product)
			}
			want := dm[k] + cells.MeanAt(tm, k)
			if !close(*e.Demand, want) || !close(*e.DemandVar, dv[k]) {
				t.Fatalf("%s %s %s: demand %v var %v, under the job's likelihood %v var %v", where, msg.BinStart, e.Product, *e.Demand, *e.DemandVar, want, dv[k])
			}
			demands++
		}
		smoothed++
	}
	t.Logf("initial noise %.4g; re-learned %v; %d filtered outputs, %d smoothed bins (%d published while the runner's noise differed by >10%%), %d demands checked",
		initial, noises(jobLik), filtered, smoothed, moved, demands)
	if moved == 0 || filtered == 0 {
		t.Fatalf("no smoothed revision published while the runner's likelihood differed from the job's: the test would not tell them apart")
	}
}

// checkPredVar asserts pred_var = var + lik's noise variance at each
// cell's level, to 1e-12.
func checkPredVar(t *testing.T, cells spec.Boundary, what string, bin time.Time, es []wire.Estimate, lik cvi.Likelihood) {
	t.Helper()
	tm := ModelTime(bin.Unix())
	for k, e := range es {
		want := cvi.NoiseVarianceAt(lik, cells.LevelAt(tm, k))
		if got := e.PredVar - e.Var; math.Abs(got-want) > 1e-12*math.Max(1, want) {
			t.Fatalf("%s %s %s: pred_var-var %v, want the noise %v (level %v)", what, bin, e.Product, got, want, cells.LevelAt(tm, k))
		}
	}
}

func noises(m map[int]cvi.Likelihood) map[int]float64 {
	out := map[int]float64{}
	for k, l := range m {
		out[k] = l.NoiseVariance()
	}
	return out
}
