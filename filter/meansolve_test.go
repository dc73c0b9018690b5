package filter

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMeanSolverMatchesSmoother: MeanSolver.Solve equals the smoother's
// route to the same vector, the posterior mean of sites (λ₁, λ₂) less
// that of (0, λ₂), on dense independent chains (one kernel shared, and
// distinct kernels per product), from the stationary prior and from a
// saved start, to 1e-10 of the largest mean; the unrolled 2-state chains
// are refused with ErrMeanSolverModel.
func TestMeanSolverMatchesSmoother(t *testing.T) {
	cases := parallelCases()
	for _, tc := range []testCase{cases[1], cases[3]} {
		rng := rand.New(rand.NewPCG(5, 11))
		m := tc.model(t)
		np := m.NumProducts()
		times := randomTimes(rng, 40, 20)
		s := randomSites(rng, len(times), np, false, 0.2)
		const w = 15
		started, err := m.WithStart(times[w-1], onlinePrefix(t, m, times, s, w).Save())
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range []struct {
			name  string
			m     *Model
			times []float64
			s     *Sites
		}{{"", m, times, s}, {"/started", started, times[w:], sitesFrom(s, w)}} {
			t.Run(tc.name+run.name, func(t *testing.T) {
				var sol MeanSolver
				if err := sol.Prepare(run.m, run.times, run.s.Nat2); err != nil {
					t.Fatal(err)
				}
				got := make([]float64, len(run.s.Nat1))
				// Twice with different right sides: Solve keeps no state.
				for pass := range 2 {
					nat1 := make([]float64, len(run.s.Nat1))
					for i := range nat1 {
						nat1[i] = run.s.Nat1[i] * float64(1+pass)
						if pass == 1 && run.s.Nat2[i] > 0 {
							nat1[i] += rng.NormFloat64()
						}
					}
					sol.Solve(got, nat1)
					want := smootherSolve(t, run.m, run.times, nat1, run.s.Nat2)
					var scale, worst float64
					for i := range want {
						scale = math.Max(scale, math.Abs(want[i]))
						worst = math.Max(worst, math.Abs(got[i]-want[i]))
					}
					if !(worst <= 1e-10*scale) || scale == 0 {
						t.Errorf("pass %d: largest difference %g of means up to %g", pass, worst, scale)
					}
				}
			})
		}
	}
	m := cases[0].model(t)
	times := []float64{0, 1, 2}
	var sol MeanSolver
	if err := sol.Prepare(m, times, make([]float64, len(times)*m.NumProducts())); !errors.Is(err, ErrMeanSolverModel) {
		t.Errorf("2-state chains: got %v, want ErrMeanSolverModel", err)
	}
}

// smootherSolve is (K⁻¹ + diag(nat2))⁻¹·nat1 by two smoother passes.
func smootherSolve(t *testing.T, m *Model, times, nat1, nat2 []float64) []float64 {
	t.Helper()
	n, np := len(times), m.NumProducts()
	var p Posterior
	s := &Sites{N: n, NP: np, Nat1: nat1, Nat2: nat2}
	if err := SmoothMarginals(&p, m, times, s); err != nil {
		t.Fatal(err)
	}
	out := append([]float64(nil), p.Mean...)
	s.Nat1 = make([]float64, n*np)
	if err := SmoothMarginals(&p, m, times, s); err != nil {
		t.Fatal(err)
	}
	for i, v := range p.Mean {
		out[i] -= v
	}
	return out
}
