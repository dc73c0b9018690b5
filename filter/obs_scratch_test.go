package filter

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIndependentRunsSkipCoupledScratch: a batch run of independent
// chains sizes only one scalar site's whitening scratch (d numbers), not
// the coupled update's N_p × N_p·d rows (864 MB at 2,000 products and
// d = 12, docs/city-scale.md), and gives bit for bit the numbers of a
// Posterior whose scratch a coupled run (full sites) had sized.
func TestIndependentRunsSkipCoupledScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	m := parallelCases()[1].model(t) // dense chains of dimension 11
	np, d := m.NumProducts(), m.StateDim()/m.NumProducts()
	times := randomTimes(rng, 30, 20)
	s := randomSites(rng, len(times), np, false, 0.2)
	full := randomSites(rng, len(times), np, true, 0.2)
	for _, mode := range runModes {
		t.Run(mode.name, func(t *testing.T) {
			var fresh, used Posterior
			if err := mode.run(&fresh, m, times, s); err != nil {
				t.Fatal(err)
			}
			if cap(fresh.cw) > d || cap(fresh.cs) > d || cap(fresh.t) != 0 || cap(fresh.lam) != 0 || cap(fresh.evecs) != 0 {
				t.Errorf("independent run sized the coupled scratch: cap cw %d, cs %d, t %d, lam %d, evecs %d (want cw, cs ≤ %d, others 0)",
					cap(fresh.cw), cap(fresh.cs), cap(fresh.t), cap(fresh.lam), cap(fresh.evecs), d)
			}
			if err := Smooth(&used, m, times, full); err != nil {
				t.Fatal(err)
			}
			if cap(used.cw) < np*d {
				t.Fatalf("coupled run left cw with cap %d, want ≥ %d: the test no longer covers reuse", cap(used.cw), np*d)
			}
			if err := mode.run(&used, m, times, s); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(fresh.Mean, used.Mean) || !slices.Equal(fresh.Var, used.Var) || fresh.LogLik != used.LogLik {
				t.Errorf("independent run differs after a coupled run in the same Posterior: loglik %v vs %v", fresh.LogLik, used.LogLik)
			}
		})
	}
}
