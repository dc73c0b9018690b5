package cvi

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNewtonSolveOverObserved: the conjugate gradients visit only the
// observed products; the solution is, bit for bit, that of the iteration
// over all N_p products (refSolve, the loop before), for the whole bin
// observed, a tenth of it and a localised step's few dozen, on the
// curvature of a 300-station city's bins.
func TestNewtonSolveOverObserved(t *testing.T) {
	const np = 300
	on, bins := cityOnline(t, np, 11)
	rng := rand.New(rand.NewPCG(3, 4))
	var res BinResult
	solved := 0
	for b, obs := range bins[:6] {
		if err := on.Step(float64(b+1), obs, &res); err != nil {
			t.Fatal(err)
		}
		if !on.haveHF || on.hs == nil {
			t.Fatal("no sparse curvature")
		}
		for _, frac := range []float64{1, 0.1, 0.03} {
			observed := make([]bool, np)
			dg, rhs := make([]float64, np), make([]float64, np)
			for k := range observed {
				observed[k] = rng.Float64() < frac
				dg[k] = 1 + math.Max(-on.h[k], 0) + rng.Float64()
				rhs[k] = rng.NormFloat64()
			}
			got, want := append([]float64(nil), rhs...), append([]float64(nil), rhs...)
			var ref sparseNewton
			okGot := on.newton.solve(on.hs, dg, got, observed)
			okWant := refSolve(&ref, on.hs, dg, want, observed)
			if okGot != okWant {
				t.Fatalf("bin %d, %.2f observed: ok %v, reference %v", b, frac, okGot, okWant)
			}
			for k := range got {
				if got[k] != want[k] {
					t.Fatalf("bin %d, %.2f observed, product %d: %v, reference %v", b, frac, k, got[k], want[k])
				}
			}
			if okGot {
				solved++
			}
		}
	}
	if solved == 0 {
		t.Fatal("no system solved")
	}
}

// refSolve is sparseNewton.solve as it was, over all N_p entries.
func refSolve(w *sparseNewton, h *symSparse, dg, b []float64, observed []bool) bool {
	n := h.n
	x, r, z, p, ap := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	var bb, rz float64
	for k := 0; k < n; k++ {
		if !observed[k] {
			continue
		}
		r[k] = b[k]
		z[k] = r[k] / dg[k]
		p[k] = z[k]
		bb += b[k] * b[k]
		rz += r[k] * z[k]
	}
	if bb == 0 {
		clear(b)
		return true
	}
	stop := cgTol * cgTol * bb
	w.compact(h, observed)
	off := &w.a
	for it := 0; it < 2*n+10; it++ {
		for k := range ap {
			ap[k] = 0
			if observed[k] {
				ap[k] = dg[k] * p[k]
			}
		}
		for a := 0; a < off.n; a++ {
			lo, hi := off.rowPtr[a], off.rowPtr[a+1]
			xa := p[a]
			var s float64
			for q, c := range off.col[lo:hi] {
				v := off.val[lo+q]
				s += v * p[c]
				ap[c] -= v * xa
			}
			ap[a] -= s
		}
		var pap float64
		for k, v := range p {
			pap += v * ap[k]
		}
		if !(pap > 0) {
			return false
		}
		alpha := rz / pap
		var rr, rzNew float64
		for k := range x {
			if !observed[k] {
				continue
			}
			x[k] += alpha * p[k]
			r[k] -= alpha * ap[k]
			z[k] = r[k] / dg[k]
			rr += r[k] * r[k]
			rzNew += r[k] * z[k]
		}
		if rr <= stop {
			copy(b, x)
			return true
		}
		if math.IsNaN(rr) {
			return false
		}
		beta := rzNew / rz
		rz = rzNew
		for k := range p {
			p[k] = z[k] + beta*p[k]
		}
	}
	return false
}
