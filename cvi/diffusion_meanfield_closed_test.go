package cvi

import (
	"math"
	"testing"
)

// closedForm sets whether d sums its Gaussian recipients in closed form
// (DiffusionRoutes.PointRecipients off) and returns what restores it: the
// tests of the point loop's other shortcuts compare it, term by term, with
// the reference loop, which sums every recipient point by point.
func closedForm(d *Diffusion, on bool) func() {
	old := d.opts.Routes
	d.opts.Routes.PointRecipients = !on
	return func() { d.opts.Routes = old }
}

// TestClosedRecipientsMatchPointLoop: the Gaussian recipients' terms in
// closed form give the expectation, its gradient and its Gauss–Newton
// curvature that the point loop converges to. Both are taken with a rule
// of 16,384 points (whose own error is then small) on a 300-station city
// (about 100 candidates: the fused route, in two halves) and a 60-station
// one (20: the per-excess-set route), at means around the demand: E to
// 1e-4 relative, the gradient to 1e-2 and the curvature on the pattern to
// 2e-3 of their largest entry (measured: 2.7e-3–4.3e-3 and 1.4e-4–2.8e-4,
// the fine rule's own error); the 64-point rule's gradient is 5–13 times
// further off (0.056–0.13), so the bounds tell the closed form from a rule.
func TestClosedRecipientsMatchPointLoop(t *testing.T) {
	t.Parallel()
	for _, np := range []int{300, 60} {
		on, bins := cityOnline(t, np, 3)
		d := on.lik.(*Diffusion)
		fine, err := NewDiffusion(DiffusionOptions{Explicit: d.trans, Variance: 1, Sites: DiagonalSites, Points: 16384})
		if err != nil {
			t.Fatal(err)
		}
		mean, vars := make([]float64, np), make([]float64, np)
		for b, obs := range bins[:2] {
			for k := range obs {
				mean[k] = obs[k].Y + 0.2*float64((k+b)%3)
				vars[k] = 0.5 + 0.1*float64(k%5)
			}
			run := func(d *Diffusion, closed bool) (float64, []float64, []float64) {
				defer closedForm(d, closed)()
				g := make([]float64, np)
				e, hs, ok := d.expectCoupledSparse(obs, mean, vars, g, false)
				if !ok || hs == nil || math.IsNaN(e) {
					t.Fatal("no sparse expectation")
				}
				if closed && len(d.cs.fs.closed) < np/3 {
					t.Fatalf("%d products: %d recipients in closed form", np, len(d.cs.fs.closed))
				}
				return e, g, append([]float64(nil), hs.val...)
			}
			eRef, gRef, hRef := run(fine, false)
			eC, gC, hC := run(fine, true)
			_, g64, h64 := run(d, false)
			gd, hd, gd64, hd64 := maxDiff(gC, gRef), maxDiff(hC, hRef), maxDiff(g64, gRef), maxDiff(h64, hRef)
			t.Logf("%d products, bin %d: E %v (points: %v); gradient %.2g, curvature %.2g of the largest entry (64-point rule: %.2g, %.2g)", np, b, eC, eRef, gd, hd, gd64, hd64)
			if math.Abs(eC-eRef) > 1e-4*math.Abs(eRef) || gd > 1e-2 || hd > 2e-3 {
				t.Errorf("%d products, bin %d: E %v against %v, gradient %.3g, curvature %.3g", np, b, eC, eRef, gd, hd)
			}
			if gd64 <= 1e-2 {
				t.Errorf("%d products, bin %d: the 64-point rule's gradient is within the bound too (%.3g): the test cannot tell", np, b, gd64)
			}
		}
	}
}

// maxDiff returns max |a − b| over the largest |b|.
func maxDiff(a, b []float64) float64 {
	var d, s float64
	for i := range a {
		d, s = math.Max(d, math.Abs(a[i]-b[i])), math.Max(s, math.Abs(b[i]))
	}
	return d / s
}

// TestClosedRecipientsGradient: the closed-form terms' gradient is the
// derivative of their expectation (central differences, 1e-7 of the
// largest entry), at the candidates and the recipients alike.
func TestClosedRecipientsGradient(t *testing.T) {
	t.Parallel()
	const np = 300
	on, bins := cityOnline(t, np, 3)
	d := on.lik.(*Diffusion)
	obs := bins[0]
	mean, vars, sd := make([]float64, np), make([]float64, np), make([]float64, np)
	for k := range obs {
		mean[k] = obs[k].Y + 0.2*float64(k%3)
		vars[k] = 0.5 + 0.1*float64(k%5)
		sd[k] = math.Sqrt(vars[k])
	}
	if _, _, ok := d.expectCoupledSparse(obs, mean, vars, make([]float64, np), false); !ok {
		t.Fatal("no sparse expectation")
	}
	closedSum := func(grad []float64) float64 { return d.closedSums(obs, mean, sd, grad, 1, false) }
	grad := make([]float64, np)
	closedSum(grad)
	scale := 0.0
	for _, v := range grad {
		scale = math.Max(scale, math.Abs(v))
	}
	checked := 0
	for a := 0; a < np; a += 7 {
		const h = 1e-5
		mean[a] += h
		ep := closedSum(make([]float64, np))
		mean[a] -= 2 * h
		em := closedSum(make([]float64, np))
		mean[a] += h
		fd := (ep - em) / (2 * h)
		if math.Abs(fd-grad[a]) > 1e-7*scale {
			t.Fatalf("product %d: gradient %v, central difference %v", a, grad[a], fd)
		}
		if grad[a] != 0 {
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("%d non-zero gradient entries checked", checked)
	}
}
