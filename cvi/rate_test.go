package cvi

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/dcgpd/dcgpd/internal/mathx"
)

// TestRateMoments checks the rate's mean, variance and quantiles for
// f ~ N(m, v) against a seeded Monte Carlo sample of μ(f): mean and
// variance within 4 Monte Carlo standard errors, the quantiles within 2%.
func TestRateMoments(t *testing.T) {
	const n = 400000
	rng := rand.New(rand.NewPCG(1, 2))
	z := make([]float64, n)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	for _, tc := range []struct {
		name string
		link Link
		mu   func(float64) float64
		m, v float64
	}{
		{"exp one pickup", ExpLink, math.Exp, -0.05, 0.3},
		{"exp busy", ExpLink, math.Exp, 2.5, 0.05},
		{"exp wide", ExpLink, math.Exp, 0, 1},
		{"exp point", ExpLink, math.Exp, 1, 0},
		{"softplus low", SoftplusLink, mathx.Softplus, -1, 0.5},
		{"softplus high", SoftplusLink, mathx.Softplus, 6, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mean, variance, q05, q95 := tc.link.RateMoments(tc.m, tc.v)
			s := make([]float64, n)
			var s1, s2 float64
			for i, zi := range z {
				s[i] = tc.mu(tc.m + math.Sqrt(tc.v)*zi)
				s1 += s[i]
			}
			mc := s1 / n
			for _, x := range s {
				s2 += (x - mc) * (x - mc)
			}
			mcVar := s2 / (n - 1)
			var s4 float64
			for _, x := range s {
				d := (x-mc)*(x-mc) - mcVar
				s4 += d * d
			}
			seMean, seVar := math.Sqrt(mcVar/n), math.Sqrt(s4/n/n)
			if math.Abs(mean-mc) > 4*seMean+1e-9*mc {
				t.Errorf("mean %.6g, Monte Carlo %.6g ± %.2g", mean, mc, seMean)
			}
			if math.Abs(variance-mcVar) > 4*seVar+1e-9*mc*mc {
				t.Errorf("var %.6g, Monte Carlo %.6g ± %.2g", variance, mcVar, seVar)
			}
			sort.Float64s(s)
			for _, q := range []struct {
				got float64
				p   float64
			}{{q05, 0.05}, {q95, 0.95}} {
				want := s[int(q.p*n)]
				if math.Abs(q.got-want) > 0.02*want {
					t.Errorf("%g quantile %.6g, Monte Carlo %.6g", q.p, q.got, want)
				}
			}
		})
	}
	if m, v, a, b := ExpLink.RateMoments(0, -1); !math.IsNaN(m) || !math.IsNaN(v) || !math.IsNaN(a) || !math.IsNaN(b) {
		t.Error("negative variance: want NaN moments")
	}
}
