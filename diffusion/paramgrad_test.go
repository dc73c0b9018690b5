package diffusion

import (
	"math"
	"math/rand/v2"
	"testing"
)

// kernelCase builds T at (ℓ, π) from a graph, optionally masked.
type kernelCase struct {
	name  string
	g     *Graph
	avail []bool
}

func (c kernelCase) build(t *testing.T, ell, pi float64) *Transition {
	t.Helper()
	tr, err := c.g.Transition(ell, pi)
	if err != nil {
		t.Fatal(err)
	}
	if c.avail == nil {
		return tr
	}
	m := new(Transition)
	if err := tr.MaskInto(m, c.avail); err != nil {
		t.Fatal(err)
	}
	return m
}

func kernelCases(t *testing.T, r *rand.Rand) []kernelCase {
	feats := randFeatures(r, 10, 2, -1, 1)
	geo := randFeatures(r, 10, 2, 0, 1)
	for _, p := range geo {
		p[0], p[1] = 40.7+0.02*p[0], -74+0.02*p[1]
	}
	mk := func(f [][]float64, opt GraphOptions) *Graph {
		g, err := NewGraph(f, opt)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	avail := []bool{true, false, true, true, false, true, true, true, false, true}
	return []kernelCase{
		{"dense", mk(feats, GraphOptions{}), nil},
		{"kNN", mk(feats, GraphOptions{K: 3}), nil},
		{"cutoff", mk(feats, GraphOptions{Cutoff: 0.8}), nil},
		{"masked", mk(feats, GraphOptions{}), avail},
		{"great circle", mk(geo, GraphOptions{Metric: GreatCircle, K: 4}), nil},
	}
}

// ∂T/∂ℓ and ∂T/∂π equal central finite differences (relative 1e-6).
func TestTransitionDerivs(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, c := range kernelCases(t, r) {
		ell := 0.6
		if c.g.Metric() == GreatCircle {
			ell = 800
		}
		for _, pi := range []float64{0, 0.35} {
			tr := c.build(t, ell, pi)
			n := tr.N()
			dl, dp := make([]float64, n*n), make([]float64, n*n)
			if err := tr.DerivsDense(dl, dp); err != nil {
				t.Fatal(err)
			}
			he, hp := 1e-5*ell, 1e-5
			fdl := fdDense(t, n, func(s float64) *Transition { return c.build(t, ell+s*he, pi) }, he)
			// T is linear in π: a forward difference is exact and stays in [0, 1).
			fdp := fdDense(t, n, func(s float64) *Transition { return c.build(t, ell, pi+(s+1)/2*hp) }, hp/2)
			checkRel(t, c.name+" dT/dℓ", dl, fdl, 1e-6)
			checkRel(t, c.name+" dT/dπ", dp, fdp, 1e-6)
			// Entry-aligned form agrees with the dense one.
			el, ep := make([]float64, tr.NNZ()), make([]float64, tr.NNZ())
			if err := tr.Derivs(el, ep); err != nil {
				t.Fatal(err)
			}
			k := 0
			for i := range n {
				cols, _ := tr.Row(i)
				for _, j := range cols {
					if el[k] != dl[i*n+j] || ep[k] != dp[i*n+j] {
						t.Fatalf("%s: entry %d (%d,%d) differs from the dense derivative", c.name, k, i, j)
					}
					k++
				}
			}
		}
	}
}

// fdDense returns the central difference (T(+h) − T(−h))/2h of dense T.
func fdDense(t *testing.T, n int, at func(s float64) *Transition, h float64) []float64 {
	p, m := denseT(t, at(1)), denseT(t, at(-1))
	for k := range p {
		p[k] = (p[k] - m[k]) / (2 * h)
	}
	return p
}

// checkRel compares with a relative tolerance whose floor is the largest
// magnitude in want (entries near zero are compared on that scale).
func checkRel(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	var scale float64
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for k := range got {
		if !closeRel(got[k], want[k], tol, scale) {
			t.Fatalf("%s[%d] = %.12g, finite difference %.12g (scale %.3g)", what, k, got[k], want[k], scale)
		}
	}
}

// ∂g/∂ℓ and ∂g/∂π at fixed f equal central finite differences.
func TestParamGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, c := range kernelCases(t, r) {
		ell := 0.6
		if c.g.Metric() == GreatCircle {
			ell = 800
		}
		for _, steps := range []int{1, 2, 3} {
			pi := 0.2
			op := Operator{T: c.build(t, ell, pi), Steps: steps}
			n := op.T.N()
			ws := NewWorkspace(n, steps)
			for range 5 {
				f, u := awayFromKinks(t, r, op, 1e-3)
				gl, gp := make([]float64, n), make([]float64, n)
				if err := op.ParamGrad(gl, gp, f, u, ws); err != nil {
					t.Fatal(err)
				}
				fd := func(build func(s float64) *Transition, h float64) []float64 {
					a, b := make([]float64, n), make([]float64, n)
					if err := (Operator{build(1), steps}).Apply(a, nil, f, u, ws); err != nil {
						t.Fatal(err)
					}
					if err := (Operator{build(-1), steps}).Apply(b, nil, f, u, ws); err != nil {
						t.Fatal(err)
					}
					for k := range a {
						a[k] = (a[k] - b[k]) / (2 * h)
					}
					return a
				}
				he, hp := 1e-5*ell, 1e-5
				checkRel(t, c.name+" dg/dℓ", gl, fd(func(s float64) *Transition { return c.build(t, ell+s*he, pi) }, he), 1e-6)
				checkRel(t, c.name+" dg/dπ", gp, fd(func(s float64) *Transition { return c.build(t, ell, pi+s*hp) }, hp), 1e-6)
			}
		}
	}
	explicit, err := NewTransitionDense(2, []float64{0, 1, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if err := (Operator{explicit, 1}).ParamGrad(make([]float64, 2), nil, []float64{1, 0}, []float64{0.5, 0.5}, nil); err == nil {
		t.Error("ParamGrad on an explicit transition: no error")
	}
}

func TestRawParams(t *testing.T) {
	for _, theta := range []float64{-40, -3, -0.2, 0, 0.7, 5, 50, 800} {
		ell, d := LengthscaleFromRaw(theta)
		if !(ell > 0) || math.IsInf(ell, 0) {
			t.Errorf("softplus(%v) = %v", theta, ell)
		}
		const h = 1e-6
		a, _ := LengthscaleFromRaw(theta + h)
		b, _ := LengthscaleFromRaw(theta - h)
		if !closeRel(d, (a-b)/(2*h), 1e-6, 1e-300) {
			t.Errorf("dℓ/dθ(%v) = %v, finite difference %v", theta, d, (a-b)/(2*h))
		}
		back, err := LengthscaleToRaw(ell)
		if err != nil || !closeRel(back, theta, 1e-12, 1) {
			t.Errorf("LengthscaleToRaw(softplus(%v)) = %v, %v", theta, back, err)
		}
	}
	for _, ell := range []float64{1e-300, 1e-8, 0.03, 1, 1e300} {
		theta, err := LengthscaleToRaw(ell)
		if err != nil {
			t.Fatal(err)
		}
		if back, _ := LengthscaleFromRaw(theta); !closeRel(back, ell, 1e-12, 0) {
			t.Errorf("softplus(LengthscaleToRaw(%v)) = %v", ell, back)
		}
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := LengthscaleToRaw(bad); err == nil {
			t.Errorf("LengthscaleToRaw(%v) accepted", bad)
		}
	}

	// π = 0 is reached at θ = 0 with slope 1, so it can be left.
	if pi, d := SinkFromRaw(0); pi != 0 || d != 1 {
		t.Errorf("SinkFromRaw(0) = %v, %v; want 0, 1", pi, d)
	}
	for _, theta := range []float64{-2, -0.3, 1e-3, 0.4, 3} {
		pi, d := SinkFromRaw(theta)
		const h = 1e-6
		a, _ := SinkFromRaw(theta + h)
		b, _ := SinkFromRaw(theta - h)
		if !(pi >= 0 && pi < 1) || !closeRel(d, (a-b)/(2*h), 1e-6, 0) {
			t.Errorf("SinkFromRaw(%v) = %v, %v (finite difference %v)", theta, pi, d, (a-b)/(2*h))
		}
		back, err := SinkToRaw(pi)
		if err != nil || !closeRel(back, math.Abs(theta), 1e-9, 0) {
			t.Errorf("SinkToRaw(%v) = %v, %v, want %v", pi, back, err, math.Abs(theta))
		}
	}
	for _, theta := range []float64{25, -1e4, 1e300} {
		if pi, d := SinkFromRaw(theta); !(pi < 1) || math.IsNaN(d) {
			t.Errorf("SinkFromRaw(%v) = %v, %v; want π < 1", theta, pi, d)
		}
	}
	for _, bad := range []float64{-0.1, 1, math.NaN()} {
		if _, err := SinkToRaw(bad); err == nil {
			t.Errorf("SinkToRaw(%v) accepted", bad)
		}
	}
}
