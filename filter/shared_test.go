package filter

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSharedChainRunsMatch checks that the runs keeping one chain's
// storage at a time (FilterLogLik, and SmoothMarginals on independent
// chains) give Filter's and Smooth's numbers bit for bit, keep one
// chain's storage, and refuse Predict (coupled chains: FilterLogLik
// against Filter).
func TestSharedChainRunsMatch(t *testing.T) {
	cases := []testCase{
		{"matern32/indep3", indepModel(m32(0.9, 1.7), 3), false},
		{"matern12/indep2 (two-state route)", indepModel(m12(0.8, 3.0), 2), false},
		{"per-product", perProductModel(), false},
		{"matern32/indep2/full sites", indepModel(m32(0.9, 1.7), 2), true},
	}
	for _, tc := range cases {
		for _, pair := range []struct {
			name        string
			ref, shared func(*Posterior, *Model, []float64, *Sites) error
		}{
			{"filter", Filter, FilterLogLik},
			{"smooth", Smooth, SmoothMarginals},
		} {
			if tc.full && pair.name == "smooth" {
				continue // coupled SmoothMarginals is the Bryson–Frazier pass, not RTS
			}
			t.Run(tc.name+"/"+pair.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, 11))
				m := tc.model(t)
				times := randomTimes(rng, 40, 12)
				s := randomSites(rng, len(times), m.NumProducts(), tc.full, 0.2)
				var ref, sh Posterior
				if err := pair.ref(&ref, m, times, s); err != nil {
					t.Fatal(err)
				}
				if err := pair.shared(&sh, m, times, s); err != nil {
					t.Fatal(err)
				}
				if math.Float64bits(ref.LogLik) != math.Float64bits(sh.LogLik) {
					t.Errorf("log Z̃ %.17g, reference %.17g", sh.LogLik, ref.LogLik)
				}
				for name, ab := range map[string][2][]float64{"mean": {ref.Mean, sh.Mean}, "var": {ref.Var, sh.Var}, "cov": {ref.Cov, sh.Cov}} {
					a, b := ab[0], ab[1]
					if len(a) != len(b) {
						t.Fatalf("%s: %d values, reference %d", name, len(b), len(a))
					}
					for i := range a {
						if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
							t.Fatalf("%s[%d] = %.17g, reference %.17g", name, i, b[i], a[i])
						}
					}
				}
				if !tc.full && len(sh.chains) != 1 {
					t.Errorf("%d chains kept, want 1", len(sh.chains))
				}
				if err := sh.Predict(times[3], make([]float64, m.NumProducts()), nil); err == nil {
					t.Error("Predict on a marginals-only posterior: want an error")
				}
			})
		}
	}
}
