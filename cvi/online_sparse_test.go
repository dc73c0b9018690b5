package cvi

import (
	"math"
	"testing"
)

// TestCoupledSparseMatchesDense: the Gauss–Newton curvature on the
// graph's pattern equals the dense N_p×N_p one entry by entry (and is
// zero outside the pattern), and the gradient and E agree, both for the
// per-excess-set sums (at most 64 products with finite supply) and the
// point-by-point chain rule (more). Tolerance 1e-12 relative to the
// largest entry: the two routes add the same terms in different orders.
func TestCoupledSparseMatchesDense(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		np     int
		stockK int // every stockK-th product has a finite supply
	}{{"grouped", 60, 3}, {"pointwise", 150, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			on, bins := cityOnline(t, tc.np, 3)
			d := on.lik.(*Diffusion)
			closedForm(d, false) // the point loop's own sums, term by term
			np := tc.np
			mean, vars := make([]float64, np), make([]float64, np)
			gd, gs := make([]float64, np), make([]float64, np)
			hf := make([]float64, np*np)
			for trial, obs := range bins[:4] {
				for k := range obs {
					if k%tc.stockK == 0 && math.IsInf(obs[k].Supply, 1) {
						obs[k].Supply = math.Floor(obs[k].Y * 0.8)
						obs[k].Y, obs[k].Censored = obs[k].Supply, true
					}
					mean[k] = obs[k].Y + 0.5 + 0.2*float64(trial)
					vars[k] = 0.5 + 0.01*float64(k%7)
				}
				ed, ok := d.expectCoupled(obs, mean, vars, gd, hf, false)
				if !ok {
					t.Fatal("no dense coupled curvature")
				}
				es, hs, ok := d.expectCoupledSparse(obs, mean, vars, gs, false)
				if !ok || hs == nil {
					t.Fatal("no sparse coupled curvature")
				}
				if math.Abs(ed-es) > 1e-12*math.Abs(ed) {
					t.Fatalf("E dense %v, sparse %v", ed, es)
				}
				scale := 0.0
				for _, v := range hf {
					scale = math.Max(scale, math.Abs(v))
				}
				offDiag := 0
				for a := 0; a < np; a++ {
					if math.Abs(gd[a]-gs[a]) > 1e-12*(1+math.Abs(gd[a])) {
						t.Fatalf("gradient %d: dense %v, sparse %v", a, gd[a], gs[a])
					}
					for b := 0; b <= a; b++ {
						var v float64
						if p := hs.find(a, b); p >= 0 {
							v = hs.val[p]
						}
						if math.Abs(hf[a*np+b]-v) > 1e-12*scale {
							t.Fatalf("curvature (%d, %d): dense %v, sparse %v", a, b, hf[a*np+b], v)
						}
						if a != b && v != 0 {
							offDiag++
						}
					}
				}
				if offDiag == 0 {
					t.Fatal("no coupling in the bin: the test checks nothing")
				}
			}
		})
	}
}

// TestOnlineSparseMatchesDense: the online refinement with the sparse
// curvature and the conjugate-gradient Newton solve gives the dense
// route's filtered moments and sites bin after bin, within 1e-9
// relative (the solve stops at a relative residual of 1e-13; the
// refinement's stopping rules see the same ELBOs up to rounding), and
// the per-product forecasts the dense covariance's diagonal.
func TestOnlineSparseMatchesDense(t *testing.T) {
	t.Parallel()
	const np = 120
	// The point loop's own sums, term by term; the sparse route's
	// localised steps have no dense counterpart (TestLocalStepsMatchWhole
	// compares them): off here.
	routes, opts := DiffusionRoutes{PointRecipients: true}, DefaultOnlineOptions()
	opts.WholeBinSteps = true
	dense, bins := cityOnlineWith(t, np, 11, routes, opts)
	sparse, _ := cityOnlineWith(t, np, 11, routes, opts)
	dense.setCoupling(false)
	sparse.setCoupling(true)
	// The dense route solves the Newton system by Cholesky: compare with
	// conjugate gradients to the rounding of a direct solve.
	sparse.newton.tol = cgTolExact
	if dense.coupled == nil || !sparse.sparse || sparse.lexp != nil {
		t.Fatal("routes not set up")
	}
	var rd, rs BinResult
	fm, fv, fc := make([]float64, np), make([]float64, np), make([]float64, np*np)
	sm, sv := make([]float64, np), make([]float64, np)
	for b, obs := range bins[:24] {
		tb := float64(b + 1)
		if err := dense.Step(tb, obs, &rd); err != nil {
			t.Fatal(err)
		}
		if err := sparse.Step(tb, obs, &rs); err != nil {
			t.Fatal(err)
		}
		if rd.Steps != rs.Steps {
			t.Fatalf("bin %d: dense %d steps, sparse %d", b, rd.Steps, rs.Steps)
		}
		for _, c := range []struct {
			name string
			x, y []float64
		}{{"mean", rd.Mean, rs.Mean}, {"var", rd.Var, rs.Var}, {"nat1", rd.Nat1, rs.Nat1}, {"nat2", rd.Nat2, rs.Nat2}} {
			for k := range c.x {
				if math.Abs(c.x[k]-c.y[k]) > 1e-9*(1+math.Abs(c.x[k])) {
					t.Fatalf("bin %d product %d %s: dense %v, sparse %v", b, k, c.name, c.x[k], c.y[k])
				}
			}
		}
		// The dense covariance route of the filter against the per-product
		// forecasts: one step of h·dt, and h steps of the forecast rows.
		stepM, stepV := make([][]float64, 7), make([][]float64, 7)
		err := sparse.ForecastSteps(1, 6, sm, sv, nil, func(h int) {
			stepM[h], stepV[h] = append([]float64(nil), sm...), append([]float64(nil), sv...)
		})
		if err != nil {
			t.Fatal(err)
		}
		var hd int
		err = dense.filt.ForecastSteps(1, 6, fm, fc, func(h int) {
			hd = h
			for k := 0; k < np; k++ {
				fv[k] = fc[k*np+k]
				if math.Abs(fm[k]-stepM[h][k]) > 1e-9*(1+math.Abs(fm[k])) || math.Abs(fv[k]-stepV[h][k]) > 1e-12*fv[k] {
					t.Fatalf("bin %d horizon %d product %d: forecast (%v, %v), steps per product (%v, %v)", b, h, k, fm[k], fv[k], stepM[h][k], stepV[h][k])
				}
			}
			if err := sparse.Forecast(tb+float64(h), sm, sv, nil); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < np; k++ {
				if math.Abs(fm[k]-sm[k]) > 1e-9*(1+math.Abs(fm[k])) || math.Abs(fv[k]-sv[k]) > 1e-12*fv[k] {
					t.Fatalf("bin %d horizon %d product %d: forecast (%v, %v), per product (%v, %v)", b, h, k, fm[k], fv[k], sm[k], sv[k])
				}
			}
		})
		if err != nil || hd != 6 {
			t.Fatalf("forecast: %v after %d steps", err, hd)
		}
	}
}

// TestOnlineSparseAllocsAndState: once warm, a bin of the sparse route
// and its six-bin forecast allocate nothing (memory stays flat over a long
// run), and the online state a snapshot stores grows with the products:
// per product one chain's mean and covariance and its site, no N_p×N_p
// array.
func TestOnlineSparseAllocsAndState(t *testing.T) {
	const np = 200
	on, bins := cityOnline(t, np, 5)
	if !on.sparse {
		t.Fatal("the city does not take the sparse route")
	}
	var res BinResult
	fm, fv := make([]float64, np), make([]float64, np)
	b := 0
	step := func() {
		if err := on.Step(float64(b+1), bins[b%len(bins)], &res); err != nil {
			t.Fatal(err)
		}
		if err := on.ForecastSteps(1, 6, fm, fv, nil, func(int) {}); err != nil {
			t.Fatal(err)
		}
		b++
	}
	for b < 40 {
		step()
	}
	if a := testing.AllocsPerRun(20, step); a != 0 {
		t.Errorf("%v allocations per bin", a)
	}
	s := on.Save()
	floats := len(s.Nat1) + len(s.Nat2)
	for c := range s.Filter.Mean {
		floats += len(s.Filter.Mean[c]) + len(s.Filter.Cov[c])
	}
	d := len(s.Filter.Mean[0])
	if want := np * (2 + d + d*d); floats != want || len(s.Filter.Mean) != np {
		t.Errorf("online state holds %d numbers in %d chains, want %d in %d", floats, len(s.Filter.Mean), want, np)
	}
}

// TestMeanFieldParamGradMatchesDense: with ℓ and π held, a city's noise
// variance gradient comes from the mean-field route and equals the dense
// route's (the same points and map) to 1e-12 relative, as do E and the
// mean derivatives.
func TestMeanFieldParamGradMatchesDense(t *testing.T) {
	t.Parallel()
	const np = 100
	on, bins := cityOnline(t, np, 17)
	d := on.lik.(*Diffusion)
	d.HoldParams([]bool{false, true, true})
	if !d.meanFieldParams() {
		t.Fatal("the city's parameter gradient does not take the mean-field route")
	}
	mean, vars := make([]float64, np), make([]float64, np)
	for trial, obs := range bins[:3] {
		for k := range obs {
			mean[k] = obs[k].Y + 0.3*float64(trial) + 0.5
			vars[k] = 0.4 + 0.02*float64(k%5)
		}
		run := func(dense bool) (float64, []float64, []float64, []float64) {
			if dense {
				defer func(r DiffusionRoutes) { d.opts.Routes = r }(d.opts.Routes)
				d.opts.Routes.MeanFieldParamsMin = math.MaxInt
			}
			g, h, pg := make([]float64, np), make([]float64, np), make([]float64, d.NumParams())
			e := d.ExpectFused(obs, mean, vars, g, h, pg)
			return e, g, h, pg
		}
		em, gm, hm, pm := run(false)
		if trial == 0 && len(d.jac) != 0 {
			t.Fatal("the mean-field route built the dense Jacobian")
		}
		ed, gd, hd, pd := run(true)
		if len(d.jac) != np*np {
			t.Fatal("the dense route was not taken")
		}
		if math.IsNaN(em) || math.Abs(em-ed) > 1e-12*math.Abs(ed) {
			t.Fatalf("E mean field %v, dense %v", em, ed)
		}
		if pd[0] == 0 || math.Abs(pm[0]-pd[0]) > 1e-12*math.Abs(pd[0]) {
			t.Fatalf("dE/dσ² mean field %v, dense %v", pm[0], pd[0])
		}
		for k := 0; k < np; k++ {
			if math.Abs(gm[k]-gd[k]) > 1e-12*(1+math.Abs(gd[k])) || math.Abs(hm[k]-hd[k]) > 1e-10*(1+math.Abs(hd[k])) {
				t.Fatalf("product %d: mean field (%v, %v), dense (%v, %v)", k, gm[k], hm[k], gd[k], hd[k])
			}
		}
	}
}
