package diffusion

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPreparedMatchesOperator checks that the bound operator computes
// bit-for-bit what the validating Operator methods compute.
func TestPreparedMatchesOperator(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		n, steps int
		pi       float64
	}{{2, 1, 0}, {3, 2, 0.2}, {8, 3, 0.5}} {
		tr := mustTransition(t, randFeatures(r, tc.n, 2, 0, 1), 0.4, tc.pi, GraphOptions{})
		op := Operator{T: tr, Steps: tc.steps}
		u := make([]float64, tc.n)
		for i := range u {
			u[i] = r.NormFloat64()
		}
		u[0] = math.Inf(1)
		p, err := op.Prepare(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		ws := NewWorkspace(tc.n, tc.steps)
		n := tc.n
		g1, g2 := make([]float64, n), make([]float64, n)
		j1, j2 := make([]float64, n*n), make([]float64, n*n)
		e1, e2, p1, p2 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for range 50 {
			f := make([]float64, n)
			for i := range f {
				f[i] = u[i%n] + r.NormFloat64()
				if math.IsInf(f[i], 0) {
					f[i] = r.NormFloat64()
				}
			}
			a1, err := op.Linearise(g1, j1, f, u, ws)
			if err != nil {
				t.Fatal(err)
			}
			a2, err := p.Linearise(g2, j2, f)
			if err != nil {
				t.Fatal(err)
			}
			if a1 != a2 || !slices.Equal(g1, g2) || (a1 && !slices.Equal(j1, j2)) {
				t.Fatalf("n=%d: Prepared.Linearise differs from Operator.Linearise", n)
			}
			if err := op.ParamGrad(e1, p1, f, u, ws); err != nil {
				t.Fatal(err)
			}
			if err := p.ParamGrad(e2, p2, f); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(e1, e2) || !slices.Equal(p1, p2) {
				t.Fatalf("n=%d: Prepared.ParamGrad differs from Operator.ParamGrad", n)
			}
		}
	}
}

func TestPreparedErrors(t *testing.T) {
	tr := mustTransition(t, [][]float64{{0}, {1}}, 1, 0, GraphOptions{})
	op := Operator{T: tr, Steps: 1}
	for name, u := range map[string][]float64{
		"short":  {1},
		"nan":    {1, math.NaN()},
		"negInf": {math.Inf(-1), 1},
	} {
		if _, err := op.Prepare(u, nil); err == nil {
			t.Errorf("%s supply: no error", name)
		}
	}
	if _, err := (Operator{T: tr}).Prepare([]float64{1, 1}, nil); err == nil {
		t.Error("zero steps: no error")
	}
	p, err := op.Prepare([]float64{0, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Linearise(make([]float64, 2), make([]float64, 3), []float64{1, 1}); err == nil {
		t.Error("short Jacobian: no error")
	}
	if err := p.ParamGrad(nil, nil, []float64{1}); err == nil {
		t.Error("short f: no error")
	}
}
