package cvi

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

type tobitGolden struct {
	Cases []struct {
		M      float64 `json:"m"`
		V      float64 `json:"v"`
		U      float64 `json:"u"`
		S2     float64 `json:"s2"`
		E      float64 `json:"E"`
		DEdm   float64 `json:"dE_dm"`
		D2Edm2 float64 `json:"d2E_dm2"`
		DEdv   float64 `json:"dE_dv"`
	} `json:"cases"`
}

// The censored Tobit term against shared/golden/tobit_expectation.json
// (mpmath adaptive quadrature, 1e-13). Achieved with the default rule:
// ≤ 3e-15 relative on every case, including the far tail (m 30σ below the
// supply) and the case whose E ≈ −1.4e-26 comes from q's far tail.
func TestTobitGolden(t *testing.T) {
	var g tobitGolden
	loadJSON(t, "tobit_expectation.json", &g)
	if len(g.Cases) == 0 {
		t.Fatal("no cases")
	}
	var worst float64
	for _, c := range g.Cases {
		tb, err := NewTobit(c.S2)
		if err != nil {
			t.Fatal(err)
		}
		o := Obs{Y: c.U, Supply: c.U, Censored: true}
		e, dm, d2m := tb.Expect(o, c.M, c.V)
		for i, p := range [][2]float64{{e, c.E}, {dm, c.DEdm}, {d2m, c.D2Edm2}, {d2m / 2, c.DEdv}} {
			r := relErr(p[0], p[1])
			worst = math.Max(worst, r)
			if r > 1e-14 {
				t.Errorf("m=%g v=%g u=%g s2=%g: quantity %d = %.17g, golden %.17g (rel %.1e)", c.M, c.V, c.U, c.S2, i, p[0], p[1], r)
			}
		}
	}
	t.Logf("worst relative error vs golden: %.1e", worst)
}

// Plain 20-node Gauss–Hermite (SetSplit(false), the reference's rule) is
// exact in the far tail but not where q is wider than σ around the supply.
// This records the trade-off behind the graded rule.
func TestTobitGoldenGaussHermite(t *testing.T) {
	var g tobitGolden
	loadJSON(t, "tobit_expectation.json", &g)
	for _, c := range g.Cases {
		tb, _ := NewTobit(c.S2)
		tb.SetSplit(false)
		e, dm, d2m := tb.Expect(Obs{Supply: c.U, Censored: true}, c.M, c.V)
		r := math.Max(relErr(e, c.E), math.Max(relErr(dm, c.DEdm), relErr(d2m, c.D2Edm2)))
		t.Logf("20-node GH: m=%g v=%g u=%g s2=%g (√v/σ = %.2g): worst relative error %.1e", c.M, c.V, c.U, c.S2, math.Sqrt(c.V/c.S2), r)
		if c.M == -30 && r > 1e-13 { // the far tail: near-quadratic integrand
			t.Errorf("far tail: 20-node Gauss–Hermite error %.1e", r)
		}
	}
}

// refTobitTerm integrates E[l], E[l′], E[l″] of log Φ(a + b·x), x ~ N(0,1),
// by fixed 100-point Gauss–Legendre on panels refined by halving towards
// the transition x0 = −a/b: an independent, much costlier route.
func refTobitTerm(a, b float64) [3]float64 {
	x0 := -a / b
	pts := []float64{-40, -20, -10, -5, 0, 5, 10, 20, 40}
	if x0 > -40 && x0 < 40 {
		pts = append(pts, x0)
		for d := 1e-4; d < 8; d *= 2 {
			pts = append(pts, x0-d, x0+d)
		}
	}
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			if pts[j] < pts[i] {
				pts[i], pts[j] = pts[j], pts[i]
			}
		}
	}
	var out [3]float64
	for k := range out {
		fn := func(x float64) float64 {
			l, lam, r := survival(-(a + b*x))
			return npdf(x) * [3]float64{l, lam, -lam * r}[k]
		}
		for i := 0; i+1 < len(pts); i++ {
			lo, hi := math.Max(pts[i], -40), math.Min(pts[i+1], 40)
			if hi > lo {
				out[k] += quad.Fixed(fn, lo, hi, 100, quad.Legendre{}, 0)
			}
		}
	}
	return out
}

// The default rule over a grid of widths b = √v/σ and positions of the
// supply: errors relative to the scale of each quantity (1 + |value|) stay
// ≤ 1e-13; 20-node Gauss–Hermite reaches 1e-1 here.
func TestTobitExpectGrid(t *testing.T) {
	tb, _ := NewTobit(1)
	for _, b := range []float64{0.1, 0.5, 0.7, 1, 2, 5, 10, 30, 100, 1000} {
		for _, k := range []float64{-30, -8, -4, -2, -1, 0, 1, 2, 4, 8, 30} {
			a := k * math.Sqrt(1+b*b) // E[Φ(a+bx)] = Φ(k)
			ref := refTobitTerm(a, b)
			e, dm, d2m := tb.Expect(Obs{Supply: 0, Censored: true}, a, b*b)
			for i, got := range [3]float64{e, dm, d2m} {
				if err := math.Abs(got-ref[i]) / (1 + math.Abs(ref[i])); err > 1e-13 {
					t.Errorf("b=%g a=%g: quantity %d = %.17g, reference %.17g (err %.1e)", b, a, i, got, ref[i], err)
				}
			}
		}
	}
}

// The censored predictive is a closed form; quadrature of e^{l} must agree.
func TestTobitPredictiveClosedForm(t *testing.T) {
	tb, _ := NewTobit(0.01)
	for _, q := range [][2]float64{{0.45, 0.04}, {-2, 0.25}, {3, 1}, {0.5, 1e-6}, {-30, 4}} {
		o := Obs{Y: 0.5, Supply: 0.5, Censored: true}
		want := tb.LogPredictive(o, q[0], q[1])
		got := tb.logPredictive(q[0], q[1], func(f float64) (float64, float64, float64) {
			return tobitCensored(0.5, f, 0.01)
		}, transition(0.5, 0.01))
		if math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
			t.Errorf("m=%g v=%g: quadrature %.17g, closed form %.17g", q[0], q[1], got, want)
		}
	}
}

// The uncensored Tobit term is the Gaussian likelihood, in closed form.
func TestGaussianClosedForms(t *testing.T) {
	const s2 = 0.3
	g, _ := NewGaussian(s2)
	tb, _ := NewTobit(s2)
	for _, c := range []struct{ y, m, v float64 }{{0.7, 0.5, 0.2}, {-3, 2, 0}, {1e3, -1e3, 50}} {
		o := Obs{Y: c.y, Supply: inf}
		e, dm, d2m := g.Expect(o, c.m, c.v)
		r := c.y - c.m
		want := -0.5*math.Log(2*math.Pi*s2) - 0.5*(r*r+c.v)/s2
		if relErr(e, want) > 1e-15 || relErr(dm, r/s2) > 1e-15 || d2m != -1/s2 {
			t.Errorf("%+v: Expect = (%g, %g, %g), want (%g, %g, %g)", c, e, dm, d2m, want, r/s2, -1/s2)
		}
		lp := g.LogPredictive(o, c.m, c.v)
		sd := math.Sqrt(c.v + s2)
		wantLP := -math.Log(sd) - 0.5*math.Log(2*math.Pi) - 0.5*(r/sd)*(r/sd)
		if relErr(lp, wantLP) > 1e-14 {
			t.Errorf("%+v: LogPredictive = %.17g, log N(y|m, v+σ²) = %.17g", c, lp, wantLP)
		}
		te, tdm, td2m := tb.Expect(o, c.m, c.v)
		if te != e || tdm != dm || td2m != d2m || tb.LogPredictive(o, c.m, c.v) != lp {
			t.Errorf("%+v: uncensored Tobit differs from Gaussian", c)
		}
	}
}
