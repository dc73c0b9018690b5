package cvi

import (
	"math"
	"testing"

	"github.com/dcgpd/dcgpd/internal/linalg"
	"gonum.org/v1/gonum/mat"
)

// eigProject is the reference route of psdTarget: gonum's symmetric
// eigendecomposition with eigenvalues raised to floor.
func eigProject(h []float64, np int, floor float64) []float64 {
	sym := mat.NewSymDense(np, nil)
	for a := 0; a < np; a++ {
		for b := a; b < np; b++ {
			sym.SetSym(a, b, -0.5*(h[a*np+b]+h[b*np+a]))
		}
	}
	var eig mat.EigenSym
	eig.Factorize(sym, true)
	var v mat.Dense
	eig.VectorsTo(&v)
	out := make([]float64, np*np)
	for c, e := range eig.Values(nil) {
		e = math.Max(e, floor)
		for a := 0; a < np; a++ {
			for b := 0; b < np; b++ {
				out[a*np+b] += v.At(a, c) * e * v.At(b, c)
			}
		}
	}
	return out
}

func TestPSDTarget(t *testing.T) {
	const floor = 1e-8
	for _, tc := range []struct {
		name string
		h    []float64 // curvature (negative of the precision)
		want []float64 // nil: the eigen route
	}{
		{name: "definite", h: []float64{-4, 1, 1, -3}},
		{name: "indefinite", h: []float64{-1, 2, 2, -1}},
		{name: "positive curvature", h: []float64{0.5, 0, 0, -2}},
		{name: "3x3 definite", h: []float64{-5, 1, 0.5, 1, -4, 0.2, 0.5, 0.2, -3}},
		{name: "3x3 near singular", h: []float64{-1, 1, 0, 1, -1, 0, 0, 0, -2}},
		{name: "zero row stays unobserved", h: []float64{-2, 0, 0, 0}, want: []float64{2, 0, 0, 0}},
		{name: "all zero", h: []float64{0, 0, 0, 0}, want: []float64{0, 0, 0, 0}},
	} {
		np := int(math.Sqrt(float64(len(tc.h))))
		got, scratch := make([]float64, np*np), make([]float64, np*np)
		if err := psdTarget(got, scratch, tc.h, np, floor); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := tc.want
		if want == nil {
			want = eigProject(tc.h, np, floor)
		}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
				t.Errorf("%s: entry %d = %v, want %v", tc.name, i, got[i], want[i])
			}
		}
	}
}

// TestSqrtCovSemiDefinite checks the eigen route of sqrtCov, taken when
// the covariance is only semi-definite: L·Lᵀ reproduces it.
func TestSqrtCovSemiDefinite(t *testing.T) {
	P := []float64{1, 1, 0, 1, 1, 0, 0, 0, 2} // rank 2
	L := make([]float64, 9)
	if linalg.CholeskySym(L, P, 3) {
		t.Fatal("singular matrix took the Cholesky route")
	}
	if err := sqrtCov(L, P, 3); err != nil {
		t.Fatal(err)
	}
	checkFactor(t, L, P, 3)
}

// checkFactor checks L·Lᵀ = a (n×n) to 1e-14.
func checkFactor(t *testing.T, l, a []float64, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for k := 0; k < n; k++ {
				s += l[i*n+k] * l[j*n+k]
			}
			if math.Abs(s-a[i*n+j]) > 1e-14 {
				t.Errorf("L·Lᵀ[%d,%d] = %v, want %v", i, j, s, a[i*n+j])
			}
		}
	}
}
