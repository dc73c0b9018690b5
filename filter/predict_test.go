package filter

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// TestPredictMatchesDenseGP checks predictions before the first bin,
// between bins, at bins and after the last bin (forecasts) against the
// dense GP evaluated on the grid augmented with the prediction times as
// unobserved bins.
func TestPredictMatchesDenseGP(t *testing.T) {
	cases := []testCase{
		{"matern32/indep2", indepModel(m32(0.9, 1.7), 2), false},
		{"matern52/indep2", indepModel(m52(1.2, 2.5), 2), false},
		{"matern12/indep2/full", indepModel(m12(0.8, 3.0), 2), true},
	}
	cases = append(cases, testCase{"per-product/full", perProductModel(), true}, testCase{"per-product", perProductModel(), false})
	cases = append(cases, extraDenseCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 5))
			m := tc.model(t)
			np := m.NumProducts()
			times := randomTimes(rng, 25, 10)
			s := randomSites(rng, len(times), np, tc.full, 0.2)
			var p Posterior
			if err := Smooth(&p, m, times, s); err != nil {
				t.Fatal(err)
			}
			queries := []float64{times[0] - 2.5, times[0] - 0.01, times[3], 0.5 * (times[7] + times[8]), times[12] + 1e-4, times[len(times)-1] + 0.3, times[len(times)-1] + 4}
			// Augmented grid: bins plus queries without information.
			all := append(append([]float64(nil), times...), queries...)
			sort.Float64s(all)
			all = dedupe(all)
			aug := NewSites(len(all), np, tc.full)
			for i, tt := range all {
				j := sort.SearchFloat64s(times, tt)
				if j < len(times) && times[j] == tt {
					l1, l2 := s.Bin(j)
					a1, a2 := aug.Bin(i)
					copy(a1, l1)
					copy(a2, l2)
				}
			}
			g := newDenseGP(t, m, all, aug)
			mean, cov := make([]float64, np), make([]float64, np*np)
			for _, q := range queries {
				if err := p.Predict(q, mean, cov); err != nil {
					t.Fatal(err)
				}
				i := sort.SearchFloat64s(all, q)
				for a := 0; a < np; a++ {
					if !relClose(mean[a], g.mean[i*np+a], 1e-9) {
						t.Errorf("t=%v product %d: mean %.15g vs dense %.15g", q, a, mean[a], g.mean[i*np+a])
					}
					for b := 0; b < np; b++ {
						want := g.cov.At(i*np+a, i*np+b)
						if p.Cov == nil && a != b {
							continue
						}
						if !relClose(cov[a*np+b], want, 1e-9) {
							t.Errorf("t=%v cov(%d,%d): %.15g vs dense %.15g", q, a, b, cov[a*np+b], want)
						}
					}
				}
			}
		})
	}
}

func dedupe(s []float64) []float64 {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
