package backtest

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream"
)

// meanGrid is n hourly bins of three products, censored now and then,
// starting mid-week.
func meanGrid(n int) *Grid {
	rng := rand.New(rand.NewPCG(5, 6))
	np := 3
	g := &Grid{Start: time.Date(2024, 1, 3, 17, 0, 0, 0, time.UTC), Width: time.Hour, Products: []string{"a", "b", "c"},
		Y: nanMatrix(n, np), Supply: fillMatrix(n, np, math.Inf(1)), Censored: boolMatrix(n, np), Truth: nanMatrix(n, np)}
	for i := range n {
		for k := range np {
			y := math.Round(8 + 5*math.Sin(2*math.Pi*float64(i)/24+float64(k)) + 2*rng.NormFloat64())
			g.Truth[i][k] = y
			if rng.Float64() < 0.05 {
				continue // missing
			}
			u := 6 + math.Floor(8*rng.Float64())
			g.Y[i][k], g.Supply[i][k] = y, u
			if y >= u {
				g.Y[i][k], g.Censored[i][k] = u, true
			}
			if rng.Float64() < 0.3 {
				g.Supply[i][k] = math.Inf(1)
				g.Y[i][k], g.Censored[i][k] = y, false
			}
		}
	}
	return g
}

// TestRunPriorMeanIsAnOffset: the daemon's per-bin path (online steps,
// re-smoothing every 24 bins, forecasts to 6 bins) with a prior mean
// publishes the same filtered estimates and forecasts as the same model
// without one on the data shifted by hand (y − m, u − m) with m of each
// target bin added back, to 1e-12 (the realised demand of the origin's
// own bin to 1e-9), for the Tobit and the diffusion likelihood. The phase of m comes from absolute time (the grid starts
// mid-week).
func TestRunPriorMeanIsAnOffset(t *testing.T) {
	const n, H = 120, 6
	g := meanGrid(n)
	rng := rand.New(rand.NewPCG(9, 9))
	no := false
	mean := spec.Mean{Kind: "periodic", Period: 168, Step: 1, Estimate: &no, Values: map[string][]float64{}}
	for _, p := range g.Products {
		vs := make([]float64, 168)
		for c := range vs {
			vs[c] = 4 * rng.NormFloat64()
		}
		mean.Values[p] = vs
	}
	prof, err := mean.NewProfile(g.Products)
	if err != nil {
		t.Fatal(err)
	}
	mt := func(i int) float64 { return stream.ModelTime(g.BinStart(i).Unix()) }
	shifted := &Grid{Start: g.Start, Width: g.Width, Products: g.Products, Y: nanMatrix(n, 3), Supply: fillMatrix(n, 3, 0), Censored: g.Censored, Truth: g.Truth}
	for i := range n {
		for k := range 3 {
			m := prof.At(mt(i), k)
			shifted.Y[i][k], shifted.Supply[i][k] = g.Y[i][k]-m, g.Supply[i][k]-m
		}
	}
	for name, lik := range map[string]spec.Model{
		"tobit":     {Likelihood: "tobit", NoiseVariance: 2},
		"diffusion": {Likelihood: "diffusion", NoiseVariance: 2, Diffusion: spec.Diffusion{Lengthscale: 300, Sink: 0.2}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := func(withMean bool) config.ModelConfig {
				m := config.DefaultModelConfig()
				m.Name, m.Bin, m.Origin, m.Horizon = "t", config.Duration{Duration: time.Hour}, g.Start, H
				m.Resmooth.EveryBins, m.Resmooth.Window = 24, 48
				m.Geographic = true
				m.Product = []config.ProductConfig{{Name: "a", Features: []float64{40.70, -74.0}},
					{Name: "b", Features: []float64{40.702, -74.0}}, {Name: "c", Features: []float64{40.70, -74.002}}}
				m.Model = lik
				m.Model.Temporal = []spec.Temporal{{Kernel: "matern32", Variance: 4, Lengthscale: 3},
					{Kernel: "periodic", Variance: 9, Lengthscale: 1, Period: 24, Harmonics: 3}}
				if withMean {
					m.Model.Mean = mean
				}
				return m
			}
			got, err := Run(context.Background(), g, cfg(true), RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Run(context.Background(), shifted, cfg(false), RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			differ := 0
			for h := 0; h <= H; h++ {
				for o := 0; o+h < n; o++ {
					for k := range 3 {
						m := prof.At(mt(o+h), k)
						want, have := ref.Mean[h][o][k]+m, got.Mean[h][o][k]
						if math.Abs(have-want) > 1e-12*math.Max(1, math.Abs(want)) || got.PredVar[h][o][k] != ref.PredVar[h][o][k] {
							t.Fatalf("origin %d h=%d product %d: mean %v var %v, shifted by hand %v var %v", o, h, k, have, got.PredVar[h][o][k], want, ref.PredVar[h][o][k])
						}
						if m != 0 && ref.Mean[h][o][k] != have {
							differ++
						}
					}
				}
			}
			if differ == 0 {
				t.Fatal("the prior mean changed nothing")
			}
			// The realised demand of each origin's own bin: the same offset
			// (to 1e-9: it goes through the truncated normal's moments at
			// shifted values), the same variance.
			demands := 0
			for o := 0; o < n; o++ {
				for k := range 3 {
					m := prof.At(mt(o), k)
					want, have := ref.Demand[o][k]+m, got.Demand[o][k]
					wv, hv := ref.DemandVar[o][k], got.DemandVar[o][k]
					if math.IsNaN(have) || math.Abs(have-want) > 1e-9*math.Max(1, math.Abs(want)) || math.Abs(hv-wv) > 1e-9*math.Max(1, wv) {
						t.Fatalf("origin %d product %d: demand %v var %v, shifted by hand %v var %v", o, k, have, hv, want, wv)
					}
					if g.Censored[o][k] {
						demands++
					}
				}
			}
			if demands == 0 {
				t.Fatal("no censored cell")
			}
		})
	}
}
