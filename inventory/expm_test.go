package inventory

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// generator returns the birth–death generator on 0..c with pickups λ
// (down) and returns μ (up); abs0/absC make 0 or C absorbing.
func generator(c int, lambda, mu float64, abs0, absC bool) *mat.Dense {
	q := mat.NewDense(c+1, c+1, nil)
	for x := 0; x <= c; x++ {
		if (x == 0 && abs0) || (x == c && absC) {
			continue
		}
		if x > 0 {
			q.Set(x, x-1, lambda)
			q.Set(x, x, q.At(x, x)-lambda)
		}
		if x < c {
			q.Set(x, x+1, mu)
			q.Set(x, x, q.At(x, x)-mu)
		}
	}
	return q
}

// expm returns exp(Q t).
func expm(q *mat.Dense, t float64) *mat.Dense {
	var a, e mat.Dense
	a.Scale(t, q)
	e.Exp(&a)
	return &e
}

// integralExpm returns ∫₀ᵗ exp(Q s) ds by Van Loan's block form:
// exp([[Q, I], [0, 0]] t) holds it in its top-right block.
func integralExpm(q *mat.Dense, t float64) *mat.Dense {
	n, _ := q.Dims()
	b := mat.NewDense(2*n, 2*n, nil)
	for i := range n {
		for j := range n {
			b.Set(i, j, q.At(i, j))
		}
		b.Set(i, n+i, 1)
	}
	e := expm(b, t)
	return mat.DenseCopyOf(e.Slice(0, n, n, 2*n))
}

// TestConstantRatesMatchMatrixExponential checks every output for
// constant rates against gonum's matrix exponential of the generator
// (Padé): distribution and first passage at each h to 1e-10 absolute,
// unmet counts over H and UDF(s) for every s over the planning bins to
// 1e-10 relative (counts above 1).
func TestConstantRatesMatchMatrixExponential(t *testing.T) {
	const tol = 1e-10
	cases := []struct {
		name          string
		c, s0, h, pln int
		lambda, mu    float64
	}{
		{"balanced", 20, 7, 24, 0, 3.1, 2.7},
		{"draining", 15, 12, 12, 6, 6.5, 1.2},
		{"filling", 30, 3, 10, 10, 0.4, 4.9},
		{"busy", 80, 40, 24, 0, 37, 35},
		{"very busy (sub-steps)", 60, 30, 4, 0, 260, 190},
		{"one dock", 1, 1, 5, 0, 0.7, 0.9},
		{"no docks", 0, 0, 5, 0, 0.7, 0.9},
		{"quiet", 10, 5, 6, 0, 0, 0},
		{"pickups only", 10, 5, 6, 0, 1.5, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.PlanningBins = tc.pln
			cfg.PickupWeight, cfg.ReturnWeight = 1, 2.5
			pl, err := NewPlanner(cfg)
			if err != nil {
				t.Fatal(err)
			}
			lam, mu := constant(tc.h, tc.lambda), constant(tc.h, tc.mu)
			var r Risk
			if err := pl.RiskAtRates(&r, Station{Capacity: tc.c, Bikes: tc.s0}, lam, mu); err != nil {
				t.Fatal(err)
			}
			q := generator(tc.c, tc.lambda, tc.mu, false, false)
			q0 := generator(tc.c, tc.lambda, tc.mu, true, false)
			qC := generator(tc.c, tc.lambda, tc.mu, false, true)
			for h := 1; h <= tc.h; h++ {
				p, p0, pC := expm(q, float64(h)), expm(q0, float64(h)), expm(qC, float64(h))
				check(t, "EmptyAt", h, r.EmptyAt[h-1], p.At(tc.s0, 0), tol)
				check(t, "FullAt", h, r.FullAt[h-1], p.At(tc.s0, tc.c), tol)
				check(t, "EmptyWithin", h, r.EmptyWithin[h-1], p0.At(tc.s0, 0), tol)
				check(t, "FullWithin", h, r.FullWithin[h-1], pC.At(tc.s0, tc.c), tol)
			}
			ih := integralExpm(q, float64(tc.h))
			wantP, wantR := tc.lambda*ih.At(tc.s0, 0), tc.mu*ih.At(tc.s0, tc.c)
			check(t, "UnmetPickups", tc.h, r.UnmetPickups, wantP, tol*math.Max(1, wantP))
			check(t, "UnmetReturns", tc.h, r.UnmetReturns, wantR, tol*math.Max(1, wantR))
			pln := tc.pln
			if pln == 0 {
				pln = tc.h
			}
			ip := integralExpm(q, float64(pln))
			for s := 0; s <= tc.c; s++ {
				want := cfg.PickupWeight*tc.lambda*ip.At(s, 0) + cfg.ReturnWeight*tc.mu*ip.At(s, tc.c)
				check(t, "UDF", s, r.UDF[s], want, tol*math.Max(1, want))
			}
		})
	}
}

func constant(n int, x float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = x
	}
	return s
}

func check(t *testing.T, what string, i int, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s[%d] = %.15g, want %.15g (|diff| %.3g > %.3g)", what, i, got, want, math.Abs(got-want), tol)
	}
}
