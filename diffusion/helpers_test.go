package diffusion

import (
	"math"
	"math/rand/v2"
	"testing"
)

// denseT returns T as a dense row-major matrix.
func denseT(t *testing.T, tr *Transition) []float64 {
	t.Helper()
	d := make([]float64, tr.N()*tr.N())
	if err := tr.Dense(d); err != nil {
		t.Fatal(err)
	}
	return d
}

// naiveStep is one step of f ← f + max(f − u, 0)(T − I) on a dense T,
// written the obvious way.
func naiveStep(T []float64, f, u []float64) []float64 {
	n := len(f)
	e := make([]float64, n)
	for i := range n {
		e[i] = math.Max(f[i]-u[i], 0)
	}
	out := make([]float64, n)
	for j := range n {
		out[j] = f[j] - e[j]
		for i := range n {
			out[j] += e[i] * T[i*n+j]
		}
	}
	return out
}

// naiveApply is the full D operator on a dense T.
func naiveApply(T []float64, steps int, f, u []float64) []float64 {
	cur := append([]float64(nil), f...)
	for range steps {
		cur = naiveStep(T, cur, u)
	}
	g := make([]float64, len(f))
	for i := range f {
		g[i] = f[i] + math.Max(cur[i]-f[i], 0)
	}
	return g
}

// randFeatures returns n random points in [lo, hi)^dim.
func randFeatures(r *rand.Rand, n, dim int, lo, hi float64) [][]float64 {
	p := make([][]float64, n)
	for i := range p {
		p[i] = make([]float64, dim)
		for k := range p[i] {
			p[i][k] = lo + (hi-lo)*r.Float64()
		}
	}
	return p
}

func mustTransition(t *testing.T, feats [][]float64, ell, pi float64, opt GraphOptions) *Transition {
	t.Helper()
	tr, err := NewTransition(feats, ell, pi, opt)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// closeAbs reports whether |a − b| <= tol.
func closeAbs(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// closeRel reports whether |a − b| <= tol·max(|a|, |b|, floor).
func closeRel(a, b, tol, floor float64) bool {
	return math.Abs(a-b) <= tol*math.Max(math.Max(math.Abs(a), math.Abs(b)), floor)
}

// kinkMargin returns the smallest distance of any max() argument of the
// operator at (f, u) from its kink, computed with the naive dense route, so
// finite differences with a smaller step stay on one linear piece.
func kinkMargin(T []float64, steps int, f, u []float64) float64 {
	m := math.Inf(1)
	cur := append([]float64(nil), f...)
	for range steps {
		for i := range cur {
			if !math.IsInf(u[i], 1) {
				m = math.Min(m, math.Abs(cur[i]-u[i]))
			}
		}
		cur = naiveStep(T, cur, u)
	}
	for i := range cur {
		// An exact 0 means nothing reached product i: locally constant.
		if d := cur[i] - f[i]; d != 0 {
			m = math.Min(m, math.Abs(d))
		}
	}
	return m
}
