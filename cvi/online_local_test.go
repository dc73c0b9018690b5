package cvi

import (
	"math"
	"testing"
)

// localRun is what runLocal records per bin: the filtered means and
// variances, the sites and the 6-bin forecasts' means and variances, with
// the steps taken and the localised ones among them.
type localRun struct {
	mean, vars, nat1, nat2, fm, fv [][]float64
	steps, local                   int
}

// runLocal runs bins of cityOnline's city, with the diffusion's routes,
// through the online path with localised steps on or off (tight: a
// refinement to 0.001 sd instead of 0.05; missing: a tenth of the
// stations unobserved in each bin).
func runLocal(t *testing.T, np, bins int, routes DiffusionRoutes, on, tight bool, missing ...bool) localRun {
	t.Helper()
	opts := DefaultOnlineOptions()
	opts.WholeBinSteps = !on
	o, data := cityOnlineWith(t, np, 7, routes, opts)
	if tight {
		o.opts.MeanTol, o.opts.Steps, o.opts.Tol = 0.001, 40, 1e-12
	}
	var r localRun
	var res BinResult
	fm, fv := make([]float64, np), make([]float64, np)
	for i := 0; i < bins; i++ {
		obs := data[i%len(data)]
		if len(missing) > 0 && missing[0] {
			obs = append([]Obs(nil), obs...)
			for k := i % 10; k < np; k += 10 {
				obs[k].Y, obs[k].Censored = math.NaN(), false
			}
		}
		if err := o.Step(float64(i+1), obs, &res); err != nil {
			t.Fatal(err)
		}
		r.steps += res.Steps
		r.local += o.localSteps
		r.mean = append(r.mean, append([]float64(nil), res.Mean...))
		r.vars = append(r.vars, append([]float64(nil), res.Var...))
		r.nat1 = append(r.nat1, append([]float64(nil), res.Nat1...))
		r.nat2 = append(r.nat2, append([]float64(nil), res.Nat2...))
		var hm, hv []float64
		if err := o.ForecastSteps(1, 6, fm, fv, nil, func(int) {
			hm = append(hm, fm...)
			hv = append(hv, fv...)
		}); err != nil {
			t.Fatal(err)
		}
		r.fm, r.fv = append(r.fm, hm), append(r.fv, hv)
	}
	return r
}

// localDiff is the largest and the root-mean-square difference of two
// runs: means in standard deviations of b's, variances relative to b's.
type localDiff struct {
	mean, vars, siteMean, sitePrec, fcMean, fcVar [2]float64 // max, rms
}

func diffRuns(a, b localRun) localDiff {
	var d localDiff
	acc := func(p *[2]float64, n *int, x float64) {
		p[0] = math.Max(p[0], x)
		p[1] += x * x
		*n++
	}
	var n1, n2, n3, n4, n5, n6 int
	for i := range b.mean {
		for k := range b.mean[i] {
			sd := math.Sqrt(b.vars[i][k])
			acc(&d.mean, &n1, math.Abs(a.mean[i][k]-b.mean[i][k])/sd)
			acc(&d.vars, &n2, math.Abs(a.vars[i][k]-b.vars[i][k])/b.vars[i][k])
			if l2 := b.nat2[i][k]; l2 > 0 && a.nat2[i][k] > 0 {
				// The site as a Gaussian pseudo-observation: its mean in its sd.
				acc(&d.siteMean, &n3, math.Abs(a.nat1[i][k]/a.nat2[i][k]-b.nat1[i][k]/l2)*math.Sqrt(l2))
				acc(&d.sitePrec, &n4, math.Abs(a.nat2[i][k]-l2)/l2)
			}
		}
		for k := range b.fm[i] {
			acc(&d.fcMean, &n5, math.Abs(a.fm[i][k]-b.fm[i][k])/math.Sqrt(b.fv[i][k]))
			acc(&d.fcVar, &n6, math.Abs(a.fv[i][k]-b.fv[i][k])/b.fv[i][k])
		}
	}
	for _, x := range []struct {
		p *[2]float64
		n int
	}{{&d.mean, n1}, {&d.vars, n2}, {&d.siteMean, n3}, {&d.sitePrec, n4}, {&d.fcMean, n5}, {&d.fcVar, n6}} {
		x.p[1] = math.Sqrt(x.p[1] / float64(max(x.n, 1)))
	}
	return d
}

// TestLocalExpectationMatches: the expectation restricted to a few
// moving stations gives their gradient and the curvature among them as the
// whole bin's expectation does, to 1e-12 of the largest entry, with both
// the point-by-point route (many candidates) and the per-excess-set one
// (at most 64 candidates left).
func TestLocalExpectationMatches(t *testing.T) {
	const np = 300
	on, bins := cityOnline(t, np, 5)
	d := on.lik.(*Diffusion)
	mean, vars := make([]float64, np), make([]float64, np)
	active := make([]bool, np)
	for trial, obs := range bins[:4] {
		clear(active)
		var moving []int
		for k := range obs {
			mean[k] = obs[k].Y + 0.3*float64(trial) - 0.2*float64(k%5)
			vars[k] = 0.5 + 0.2*float64(k%7)
			// Scattered stations and a block of neighbours.
			if k%(13+10*trial) == 3 || (k >= 40+30*trial && k < 50+30*trial) {
				active[k] = true
				moving = append(moving, k)
			}
		}
		run := func(local []bool) (float64, []float64, *symSparse, int) {
			grad := make([]float64, np)
			d.setLocal(local)
			e, hs, ok := d.expectCoupledSparse(obs, mean, vars, grad, trial == 3)
			d.setLocal(nil)
			if !ok || hs == nil || math.IsNaN(e) {
				t.Fatal("no sparse coupled curvature")
			}
			c := *hs
			c.val = append([]float64(nil), hs.val...)
			return e, grad, &c, len(d.mf.cand)
		}
		_, g0, c0, n0 := run(nil)
		_, g1, c1, n1 := run(active)
		if n1 >= n0 {
			t.Fatalf("bin %d: the localised expectation kept all %d candidates: the test checks nothing", trial, n0)
		}
		gs, cs := 0.0, 0.0
		for _, x := range g0 {
			gs = math.Max(gs, math.Abs(x))
		}
		for _, x := range c0.val {
			cs = math.Max(cs, math.Abs(x))
		}
		entries := 0
		for _, a := range moving {
			if math.Abs(g1[a]-g0[a]) > 1e-12*gs {
				t.Fatalf("bin %d gradient %d: localised %v, whole %v", trial, a, g1[a], g0[a])
			}
			for _, b := range moving {
				if b > a {
					continue
				}
				p := c0.find(a, b)
				if p < 0 {
					continue
				}
				entries++
				if math.Abs(c1.val[p]-c0.val[p]) > 1e-12*cs {
					t.Fatalf("bin %d curvature (%d, %d): localised %v, whole %v", trial, a, b, c1.val[p], c0.val[p])
				}
			}
		}
		t.Logf("bin %d: %d moving stations, %d curvature entries among them, %d of %d candidates visited", trial, len(moving), entries, n1, n0)
	}
}

// TestLocalStepsMatchWhole: over 48 bins of a 300-station city (all
// observed, and a tenth unobserved in each bin) the online path with
// localised steps gives the filtered means, variances and 6-bin forecasts
// of the path that takes every step on the whole bin, within the
// refinement's own tolerance (it stops once a step moves every mean by
// less than 0.05 sd): means within 0.1 sd, variances within 6%, and
// 0.01 sd, 0.5% root-mean-square.
func TestLocalStepsMatchWhole(t *testing.T) {
	t.Parallel()
	const np, bins = 300, 48
	if small, _ := cityOnline(t, sparseMinProducts, 7); small.lexp != nil {
		t.Fatalf("%d products take localised steps: models up to %d keep the whole-bin steps", sparseMinProducts, sparseMinProducts)
	}
	for _, missing := range []bool{false, true} {
		whole := runLocal(t, np, bins, DiffusionRoutes{}, false, false, missing)
		local := runLocal(t, np, bins, DiffusionRoutes{}, true, false, missing)
		if local.local == 0 || whole.local != 0 {
			t.Fatalf("missing %v: %d localised steps with them on, %d off: the test checks nothing", missing, local.local, whole.local)
		}
		d := diffRuns(local, whole)
		t.Logf("missing %v: steps whole %d, localised %d (%d of them localised); differences (max, rms): %+v", missing, whole.steps, local.steps, local.local, d)
		checkLocalDiff(t, d)
	}
}

// checkLocalDiff holds TestLocalStepsMatchWhole's bounds.
func checkLocalDiff(t *testing.T, d localDiff) {
	t.Helper()
	for _, c := range []struct {
		name     string
		got      [2]float64
		max, rms float64
	}{
		{"filtered mean (sd)", d.mean, 0.1, 0.01},
		{"filtered variance (relative)", d.vars, 0.06, 0.005},
		{"forecast mean (sd)", d.fcMean, 0.1, 0.01},
		{"forecast variance (relative)", d.fcVar, 0.06, 0.005},
	} {
		if c.got[0] > c.max || c.got[1] > c.rms {
			t.Errorf("%s: max %.4g (bound %g), rms %.4g (bound %g)", c.name, c.got[0], c.max, c.got[1], c.rms)
		}
	}
}

// TestLocalStepsAgainstTight measures both paths against a refinement to
// 0.001 sd (up to 40 steps a bin) over 64 bins of a 300-station city.
// With every recipient summed point by point (DiffusionRoutes.PointRecipients) the
// localised steps stay as close to it as the whole-bin steps do, to within
// a quarter in the largest difference and twice in the root mean square
// (measured: means 0.138 and 0.135 sd at most, 0.0066 and 0.0049 sd rms).
// With the Gaussian recipients in closed form (the default) the rule's
// noise floor is lower and the whole-bin steps end closer to the tight
// refinement (means 0.034 sd at most, 0.0028 rms); the localised steps,
// which hold the stations that moved by less than 0.05 sd, end within the
// bounds of TestLocalStepsMatchWhole (measured: 0.067 sd, 0.0054 rms).
func TestLocalStepsAgainstTight(t *testing.T) {
	t.Parallel()
	const np, bins = 300, 64
	for _, closed := range []bool{false, true} {
		routes := DiffusionRoutes{PointRecipients: !closed}
		ref := runLocal(t, np, bins, routes, false, true)
		whole := diffRuns(runLocal(t, np, bins, routes, false, false), ref)
		local := diffRuns(runLocal(t, np, bins, routes, true, false), ref)
		t.Logf("closed form %v, against the tight refinement (max, rms): whole-bin steps %+v", closed, whole)
		t.Logf("closed form %v, against the tight refinement (max, rms): localised steps %+v", closed, local)
		if closed {
			checkLocalDiff(t, whole)
			checkLocalDiff(t, local)
			continue
		}
		for _, c := range []struct {
			name         string
			whole, local [2]float64
		}{
			{"filtered mean", whole.mean, local.mean},
			{"filtered variance", whole.vars, local.vars},
			{"forecast mean", whole.fcMean, local.fcMean},
			{"forecast variance", whole.fcVar, local.fcVar},
		} {
			if c.local[0] > 1.25*c.whole[0] || c.local[1] > 2*c.whole[1] {
				t.Errorf("%s: localised steps (max %.4g, rms %.4g) against whole-bin ones (%.4g, %.4g)", c.name, c.local[0], c.local[1], c.whole[0], c.whole[1])
			}
		}
	}
}
