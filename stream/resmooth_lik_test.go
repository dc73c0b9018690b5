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

	"github.com/dcgpd/dcgpd/cvi"
)

// likSink records every output with the noise variance of the runner's
// likelihood at the moment it was published.
type likSink struct {
	mu   sync.Mutex
	r    *Runner
	outs []likOut
}

type likOut struct {
	data  []byte
	noise float64 // the runner's noise variance when it was published
}

func (s *likSink) Publish(_, _ string, data []byte, done func(error)) {
	s.mu.Lock()
	s.outs = append(s.outs, likOut{data: append([]byte(nil), data...), noise: s.r.built.Lik.NoiseVariance()})
	s.mu.Unlock()
	done(nil)
}
func (s *likSink) Latest(string, []byte) {}
func (s *likSink) Reject(string, []byte) {}

// relearnFeed is one message per hourly bin, each product observed with
// noise of variance 4 (the model starts at 1.5), product p1 censored every
// third bin, about one cell in ten missing; no late or repeated input, so
// that the feed is the bins' observations exactly.
func relearnFeed(n int, origin time.Time) []*ObsMessage {
	rng := rand.New(rand.NewPCG(31, 37))
	out := make([]*ObsMessage, 0, n)
	for b := 0; b < n; b++ {
		start := origin.Add(time.Duration(b) * time.Hour)
		m := &ObsMessage{Schema: SchemaVersion, Model: "city", BinStart: &start}
		for k := 0; k < 4; k++ {
			if rng.IntN(10) == 0 {
				continue
			}
			d := math.Max(0, 6+3*math.Sin(float64(b)/4)+2*rng.NormFloat64())
			o := Observation{Product: fmt.Sprintf("p%d", k), Demand: &d}
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
// smoothing used: pred_var = var + the job's noise variance and the
// realised demand under the job's likelihood (cvi.RealisedDemand on the
// feed's observations), to 1e-12, though the runner's likelihood is still
// the old one when they are published. Filtered bins and their forecasts
// use the runner's likelihood of their bin (the old one before the swap,
// the job's after it). The re-learned noise differs from the initial one
// by more than 10%, so a revision published with the old one fails.
func TestSmoothedRevisionUsesJobLikelihood(t *testing.T) {
	for _, likName := range []string{"tobit", "diffusion"} {
		t.Run(likName, func(t *testing.T) {
			c, m := restoreConfig(true)
			m.Model.Likelihood = likName
			m.Late = "drop"
			c.Models = []ModelConfig{m}
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
			checkLikOutputs(t, sink.outs, jobLik, obs, initial)
		})
	}
}

// checkLikOutputs asserts each output's pred_var and demand against the
// likelihood it must use (see TestSmoothedRevisionUsesJobLikelihood).
func checkLikOutputs(t *testing.T, outs []likOut, jobLik map[int]cvi.Likelihood, obs map[time.Time][]cvi.Obs, initial float64) {
	t.Helper()
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
	moved, smoothed, demands, filtered := 0, 0, 0, 0
	for _, o := range outs {
		var msg LatentMessage
		if err := json.Unmarshal(o.data, &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Missing != "" {
			t.Fatalf("%s %s: missing: %s", msg.Kind, msg.BinStart, msg.Missing)
		}
		if msg.Kind != KindSmoothed {
			// The online path: the runner's likelihood of the moment.
			for _, e := range msg.Estimates {
				if !close(e.PredVar-e.Var, o.noise) {
					t.Fatalf("filtered %s %s: pred_var-var %v, the runner's noise %v", msg.BinStart, e.Product, e.PredVar-e.Var, o.noise)
				}
			}
			for _, f := range msg.Forecasts {
				for _, e := range f.Estimates {
					if !close(e.PredVar-e.Var, o.noise) {
						t.Fatalf("forecast h=%d of %s %s: pred_var-var %v, the runner's noise %v", f.Horizon, msg.BinStart, e.Product, e.PredVar-e.Var, o.noise)
					}
				}
			}
			filtered++
			continue
		}
		lik := jobLik[msg.Revision]
		if lik == nil {
			t.Fatalf("smoothed revision %d of %s was never swapped in", msg.Revision, msg.BinStart)
		}
		noise := lik.NoiseVariance()
		if math.Abs(noise-o.noise) > 0.1*o.noise {
			moved++
		}
		row := obs[msg.BinStart.UTC()]
		mean, vars := make([]float64, len(msg.Estimates)), make([]float64, len(msg.Estimates))
		for k, e := range msg.Estimates {
			mean[k], vars[k] = e.Mean, e.Var
		}
		dm, dv := make([]float64, len(mean)), make([]float64, len(mean))
		if err := cvi.RealisedDemand(lik, row, mean, vars, dm, dv); err != nil {
			t.Fatal(err)
		}
		for k, e := range msg.Estimates {
			where := fmt.Sprintf("revision %d %s %s", msg.Revision, msg.BinStart, e.Product)
			if !close(e.PredVar-e.Var, noise) {
				t.Fatalf("%s: pred_var-var %v, the job's noise %v (the runner's then %v)", where, e.PredVar-e.Var, noise, o.noise)
			}
			if e.Demand == nil || e.DemandVar == nil {
				t.Fatalf("%s: no realised demand", where)
			}
			if !close(*e.Demand, dm[k]) || !close(*e.DemandVar, dv[k]) {
				t.Fatalf("%s: demand %v var %v, under the job's likelihood %v var %v", where, *e.Demand, *e.DemandVar, dm[k], dv[k])
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

func noises(m map[int]cvi.Likelihood) map[int]float64 {
	out := map[int]float64{}
	for k, l := range m {
		out[k] = l.NoiseVariance()
	}
	return out
}
