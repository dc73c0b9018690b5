package cvi

import (
	"math"
	"testing"
)

// An n-point rule integrates xᵏ exactly under N(0,1) for k ≤ 2n−1:
// E[xᵏ] = (k−1)!! for even k, 0 for odd k. Achieved: ≤ 1.3e-14 relative
// to Σ wᵢ|xᵢ|ᵏ for every n ≤ MaxNodes (gonum's tabulated rule).
func TestGaussHermitePolynomials(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 10, 20, 32, 64, 100, MaxNodes} {
		g, err := NewGaussHermite(n)
		if err != nil {
			t.Fatal(err)
		}
		if g.Len() != n {
			t.Fatalf("Len = %d, want %d", g.Len(), n)
		}
		for k := 0; k <= 2*n-1; k++ {
			var s, scale float64
			for i := 0; i < n; i++ {
				x, w := g.Node(i)
				p := math.Pow(x, float64(k))
				s += w * p
				scale += w * math.Abs(p)
			}
			want := 0.0
			if k%2 == 0 {
				want = 1
				for j := k - 1; j > 0; j -= 2 {
					want *= float64(j)
				}
			}
			if math.Abs(s-want) > 2e-14*scale {
				t.Errorf("n=%d: E[x^%d] = %.17g, want %.17g (rel %.1e)", n, k, s, want, math.Abs(s-want)/scale)
			}
		}
	}
}

// E[eᶠ] = e^{m+v/2} under N(m, v): exact only in the limit, but the
// Gauss–Hermite error is tiny for moderate v.
func TestGaussHermiteExp(t *testing.T) {
	g, _ := NewGaussHermite(DefaultNodes)
	for _, c := range []struct{ m, v, tol float64 }{
		{0, 1, 1e-15}, {-2, 0.25, 1e-15}, {3, 2, 1e-14}, {1, 4, 1e-12}, {0, 9, 1e-8},
	} {
		got := g.Expect(c.m, c.v, math.Exp)
		want := math.Exp(c.m + c.v/2)
		if e := relErr(got, want); e > c.tol {
			t.Errorf("m=%g v=%g: E[exp f] = %.17g, want %.17g (rel %.1e)", c.m, c.v, got, want, e)
		}
	}
}

func TestGaussHermiteEdges(t *testing.T) {
	for _, n := range []int{0, -1, MaxNodes + 1} {
		if _, err := NewGaussHermite(n); err == nil {
			t.Errorf("NewGaussHermite(%d): want error", n)
		}
	}
	a, _ := NewGaussHermite(7)
	b, _ := NewGaussHermite(7)
	if a != b {
		t.Error("rules are not cached")
	}
	sq := func(f float64) float64 { return f * f }
	if got := a.Expect(1.5, 0, sq); got != 2.25 {
		t.Errorf("v=0: got %v, want the plug-in 2.25", got)
	}
	if got := a.Expect(1.5, -1, sq); !math.IsNaN(got) {
		t.Errorf("v<0: got %v, want NaN", got)
	}
	var q Quadrature
	if q.Nodes() != DefaultNodes || !q.Split() {
		t.Errorf("zero Quadrature: %d nodes, split %v", q.Nodes(), q.Split())
	}
	if err := q.SetNodes(0); err == nil {
		t.Error("SetNodes(0): want error")
	}
	if err := q.SetNodes(40); err != nil || q.Nodes() != 40 {
		t.Errorf("SetNodes(40): %v, %d nodes", err, q.Nodes())
	}
	q.SetSplit(false)
	if q.Split() {
		t.Error("SetSplit(false) ignored")
	}
}

// The graded Gauss–Legendre rule is exact to rounding for polynomials and
// for eᶠ wherever the feature is put.
func TestSplitRule(t *testing.T) {
	cube := func(f float64) (float64, float64, float64) { return f * f * f, 3 * f * f, 6 * f }
	expo := func(f float64) (float64, float64, float64) { e := math.Exp(f); return e, e, e }
	for _, c := range []struct{ m, v, c, h float64 }{
		{0, 1, 0, 0.1}, {1, 4, -3, 0.01}, {-2, 0.5, 5, 1}, {0.3, 2, 0.3, 1e-4}, {0, 1, 50, 1},
	} {
		e, d1, d2 := expect3Split(c.m, c.v, cube, feature{c.c, c.h})
		// E[f³] = m³ + 3mv, E[3f²] = 3(m² + v), E[6f] = 6m.
		want := [3]float64{c.m*c.m*c.m + 3*c.m*c.v, 3 * (c.m*c.m + c.v), 6 * c.m}
		for i, got := range [3]float64{e, d1, d2} {
			if math.Abs(got-want[i]) > 1e-13*(1+math.Abs(want[i])) {
				t.Errorf("%+v: moment %d = %.17g, want %.17g", c, i, got, want[i])
			}
		}
		if e, _, _ := expect3Split(c.m, c.v, expo, feature{c.c, c.h}); relErr(e, math.Exp(c.m+c.v/2)) > 1e-14 {
			t.Errorf("%+v: E[exp f] = %.17g, want %.17g", c, e, math.Exp(c.m+c.v/2))
		}
		sq := func(f float64) float64 { return -0.5 * f * f }
		// log E[e^{−f²/2}] = −½log(1+v) − m²/(2(1+v)).
		want2 := -0.5*math.Log1p(c.v) - c.m*c.m/(2*(1+c.v))
		if got := logExpectExpSplit(c.m, c.v, 0, sq, feature{c.c, c.h}); math.Abs(got-want2) > 1e-13 {
			t.Errorf("%+v: log E[exp(−f²/2)] = %.17g, want %.17g", c, got, want2)
		}
	}
}
