package cvi

import (
	"math"
	"testing"

	"github.com/dcgpd/dcgpd/internal/mathx"
	"gonum.org/v1/gonum/mathext"
)

func TestLinks(t *testing.T) {
	if ExpLink.String() != "exp" || SoftplusLink.String() != "softplus" || Link(7).String() != "Link(7)" {
		t.Error("Link.String")
	}
	if _, err := NewPoisson(Link(7)); err == nil {
		t.Error("NewPoisson accepted an unknown link")
	}
	if _, err := NewCensoredPoisson(Link(-1)); err == nil {
		t.Error("NewCensoredPoisson accepted an unknown link")
	}
	// Softplus: μ, log μ and its derivatives against direct formulas and
	// central differences, across the branches (f > 0, u = eᶠ < 1e-8, else).
	for _, f := range []float64{-800, -40, -18.5, -18.3, -5, -1.4, -0.2, 0, 0.3, 2, 30, 800} {
		mu, g, g1, g2 := SoftplusLink.eval(f)
		if want := mathx.Softplus(f); relErr(mu, want) > 1e-15 {
			t.Errorf("f=%g: μ = %.17g, softplus %.17g", f, mu, want)
		}
		if f > -700 {
			if want := math.Log(mathx.Softplus(f)); relErr(g, want) > 1e-15 {
				t.Errorf("f=%g: log μ = %.17g, want %.17g", f, g, want)
			}
		} else if g != f {
			t.Errorf("f=%g: log μ = %g, want f where μ underflows", f, g)
		}
		h := 1e-5 * math.Max(1, math.Abs(f))
		_, gp, g1p, _ := SoftplusLink.eval(f + h)
		_, gm, g1m, _ := SoftplusLink.eval(f - h)
		if fd := (gp - gm) / (2 * h); !fdClose(fd, g1, math.Abs(g), h) {
			t.Errorf("f=%g: g′ = %.15g, central difference %.15g", f, g1, fd)
		}
		if fd := (g1p - g1m) / (2 * h); !fdClose(fd, g2, math.Abs(g1), h) {
			t.Errorf("f=%g: g″ = %.15g, central difference %.15g", f, g2, fd)
		}
	}
	for _, u := range []float64{1e-9, 1e-3, 0.1, 0.24, 0.26, 1} {
		want := math.Log1p(u) - u
		if u < 0.3 { // series reference: −u²/2 + u³/3 − …, to 60 terms
			want = 0
			p := -u * u
			for k := 2; k < 60; k++ {
				want += p / float64(k)
				p *= -u
			}
		}
		if relErr(log1pmx(u), want) > 1e-15 {
			t.Errorf("log1pmx(%g) = %.17g, want %.17g", u, log1pmx(u), want)
		}
	}
}

// With the exp link, Expect is the closed form; quadrature with many nodes
// must agree.
func TestPoissonExpClosedForm(t *testing.T) {
	p, _ := NewPoisson(ExpLink)
	g := gaussHermite(64)
	for _, c := range []struct{ y, m, v float64 }{{0, 1, 0.5}, {7, 2, 0.01}, {3, -1, 2}} {
		e, dm, d2m := p.Expect(Obs{Y: c.y}, c.m, c.v)
		qe, qdm, qd2m := g.expect3(c.m, c.v, func(f float64) (float64, float64, float64) {
			return poissonLogLik(ExpLink, c.y, f)
		})
		for i, pr := range [][2]float64{{e, qe}, {dm, qdm}, {d2m, qd2m}} {
			if math.Abs(pr[0]-pr[1]) > 1e-12*(1+math.Abs(pr[1])) {
				t.Errorf("%+v: moment %d closed form %.17g, quadrature %.17g", c, i, pr[0], pr[1])
			}
		}
	}
	if l, _, _ := p.LogLik(Obs{Y: -1}, 0); !math.IsNaN(l) {
		t.Errorf("y < 0: LogLik = %g, want NaN", l)
	}
}

// log P(Y ≥ k | μ) against gonum directly, across both evaluation routes.
func TestPoissonTail(t *testing.T) {
	for _, k := range []float64{1, 2, 5, 60, 1000} {
		for _, r := range []float64{1e-3, 0.3, 0.49, 0.51, 0.8, 1, 1.3, 3} {
			mu := r * (k + 1)
			l, _, _ := poissonTail(ExpLink, k, math.Log(mu))
			p := mathext.GammaIncReg(k, mu)
			want := math.Log(p)
			if mu > k {
				want = math.Log1p(-mathext.GammaIncRegComp(k, mu))
			}
			if p > 1e-300 && math.Abs(l-want) > 1e-13*math.Max(1, math.Abs(want)) {
				t.Errorf("k=%g μ=%g: log P = %.17g, gonum %.17g", k, mu, l, want)
			}
			// The series route and gonum's agree where both apply.
			if r >= 0.5 && r < 1 && p > 1e-300 {
				ls, dgs, d2gs := tailSeries(k, mu, math.Log(mu), lgam(k+1))
				lg, dlg, d2lg := poissonTail(ExpLink, k, math.Log(mu))
				if math.Abs(ls-lg) > 1e-13*math.Max(1, math.Abs(lg)) || relErr(dgs, dlg) > 1e-11 || relErr(d2gs, d2lg) > 1e-9*math.Max(1, k/math.Abs(d2lg)) {
					t.Errorf("k=%g μ=%g: series (%.15g, %.15g, %.15g), gonum route (%.15g, %.15g, %.15g)", k, mu, ls, dgs, d2gs, lg, dlg, d2lg)
				}
			}
		}
	}
	// k = 1: log(1 − e^{−μ}).
	for _, f := range []float64{-20, -2, 0, 1, 3} {
		l, _, _ := poissonTail(ExpLink, 1, f)
		want := math.Log(-math.Expm1(-math.Exp(f)))
		if f > 0 {
			want = math.Log1p(-math.Exp(-math.Exp(f)))
		}
		if relErr(l, want) > 1e-14 {
			t.Errorf("k=1 f=%g: %.17g, want %.17g", f, l, want)
		}
	}
	// Where P underflows, the series keeps log P finite: k log μ − log k! − μ + O(μ/k).
	l, dl, d2l := poissonTail(ExpLink, 1e4, math.Log(10))
	want := 1e4*math.Log(10) - lgam(1e4+1) - 10 + math.Log1p(10/(1e4+1))
	if math.Abs(l-want) > 1e-9*math.Abs(want) || math.Abs(dl-1e4) > 20 || d2l >= 0 {
		t.Errorf("k=1e4 μ=10: (%g, %g, %g), log P ≈ %g", l, dl, d2l, want)
	}
	// P(Y ≥ u) = P(Y ≥ ⌈u⌉) and P(Y ≥ 0) = 1.
	a, _, _ := poissonTail(ExpLink, 2.5, 0.7)
	b, _, _ := poissonTail(ExpLink, 3, 0.7)
	if a != b {
		t.Errorf("u=2.5 gives %g, u=3 gives %g", a, b)
	}
	for _, u := range []float64{0, -3} {
		if l, dl, d2l := poissonTail(SoftplusLink, u, 1); l != 0 || dl != 0 || d2l != 0 {
			t.Errorf("u=%g: (%g, %g, %g), want zeros", u, l, dl, d2l)
		}
	}
	if l, _, _ := poissonTail(ExpLink, 5, 1000); l != 0 {
		t.Errorf("μ = +Inf: log P = %g, want 0", l)
	}
	if l, _, _ := poissonTail(ExpLink, math.Inf(1), 1); !math.IsNaN(l) {
		t.Errorf("u = +Inf: log P = %g, want NaN", l)
	}
	if l, _, _ := poissonTail(ExpLink, 3, math.NaN()); !math.IsNaN(l) {
		t.Errorf("f = NaN: log P = %g, want NaN", l)
	}
}

func lgam(x float64) float64 {
	l, _ := math.Lgamma(x)
	return l
}
