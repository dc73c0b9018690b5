package backtest

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestRunLevelNoisePredVar: with level noise on the prior mean, every
// estimate the daemon's per-bin path publishes (the filtered one and the
// forecasts to 6 bins) has pred_var = var + σ² + c·max(m, 0) with m the
// prior mean of the estimate's own bin and product (to 1e-12 relative),
// and the noise differs between bins (the levels reach the runner).
func TestRunLevelNoisePredVar(t *testing.T) {
	const n, H, s2, c = 72, 6, 2.0, 0.7
	g := meanGrid(n)
	rng := rand.New(rand.NewPCG(11, 12))
	no := false
	mean := spec.Mean{Kind: "periodic", Period: 168, Step: 1, Estimate: &no, Values: map[string][]float64{}}
	for _, p := range g.Products {
		vs := make([]float64, 168)
		for i := range vs {
			vs[i] = 6 * rng.NormFloat64() // both signs: max(m, 0) is checked too
		}
		mean.Values[p] = vs
	}
	prof, err := mean.NewProfile(g.Products)
	if err != nil {
		t.Fatal(err)
	}
	m := config.DefaultModelConfig()
	m.Name, m.Bin, m.Origin, m.Horizon = "t", config.Duration{Duration: time.Hour}, g.Start, H
	m.Resmooth.EveryBins, m.Resmooth.Window = 24, 48
	m.Geographic = true
	m.Product = []config.ProductConfig{{Name: "a", Features: []float64{40.70, -74.0}},
		{Name: "b", Features: []float64{40.702, -74.0}}, {Name: "c", Features: []float64{40.70, -74.002}}}
	m.Model = spec.Model{Likelihood: "diffusion", NoiseVariance: s2, LevelNoise: true, NoiseSlope: c,
		Diffusion: spec.Diffusion{Lengthscale: 300, Sink: 0.2}, Mean: mean,
		Temporal: []spec.Temporal{{Kernel: "matern32", Variance: 4, Lengthscale: 3}}}
	f, err := Run(context.Background(), g, m, RunOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	noises := map[float64]bool{}
	check := func(o int, bin time.Time, es []wire.Estimate) {
		for k, e := range es {
			lvl := prof.At(stream.ModelTime(bin.Unix()), k)
			want := s2 + c*math.Max(lvl, 0)
			if got := e.PredVar - e.Var; math.Abs(got-want) > 1e-12*want {
				t.Fatalf("origin %d bin %v product %d: pred_var − var = %v, want σ² + c·max(m, 0) = %v (m = %v)", o, bin, k, got, want, lvl)
			}
			noises[want] = true
		}
	}
	for o, b := range f.Messages {
		var msg wire.LatentMessage
		if err := json.Unmarshal(b, &msg); err != nil {
			t.Fatal(err)
		}
		check(o, msg.BinStart, msg.Estimates)
		for _, fc := range msg.Forecasts {
			check(o, fc.BinStart, fc.Estimates)
		}
	}
	if len(f.Messages) != n || len(noises) < 100 {
		t.Fatalf("%d messages, %d distinct noise variances: the levels did not reach the estimates", len(f.Messages), len(noises))
	}
}
