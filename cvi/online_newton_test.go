package cvi

import (
	"math"
	"testing"
)

// TestOnlineNewtonFixedPoint: with diagonal diffusion sites on independent
// products the refinement's site update is a Newton step on the means with
// the coupled curvature. Iterated from the warm start of each bin
// it reaches a fixed point of CVI's diagonal update (λ₂ = max(−H_kk,
// floor) and ∂E/∂m = (m − pm)/p at the refined marginal), next to the one
// CVI reaches, in fewer iterations.
func TestOnlineNewtonFixedPoint(t *testing.T) {
	c := onlineCases(t)[5]
	// A finer rule than the case's: the quasi-Monte Carlo expectation is
	// piecewise smooth in the means (points cross the supply), and its
	// jumps must stay below the tolerance asked for here.
	// Gauss–Newton: the Newton step's curvature, so that CVI's diagonal
	// update (d.Expect) targets the same site precision.
	_, d := triangleEngine(t, 10, DiffusionOptions{Sites: DiagonalSites, Points: 1024, Curvature: GaussNewton})
	on, err := NewOnline(c.m, d, DefaultOnlineOptions())
	if err != nil {
		t.Fatal(err)
	}
	if on.coupled == nil {
		t.Fatal("diagonal diffusion sites give no coupled curvature")
	}
	np := c.data.NP
	start1, start2 := make([]float64, np), make([]float64, np)
	// iterate runs 200 steps damped by ½ (undamped CVI can cycle on the
	// censored terms) and returns the first after which every mean moved
	// by less than 1e-3 standard deviations. (Points crossing the supply
	// make the rule's gradient jump: iterations end in cycles of ~1e-4 sd.)
	iterate := func(obs []Obs) int {
		first := 0
		for it := 1; it <= 200; it++ {
			if err := on.refined(); err != nil {
				t.Fatal(err)
			}
			if e := on.expect(obs, false); math.IsNaN(e) {
				t.Fatal("expectation failed")
			}
			copy(on.mq, on.qm)
			copy(on.vq, on.qv)
			on.moveSite(obs, 0.5, false)
			if err := on.refined(); err != nil {
				t.Fatal(err)
			}
			moved := 0.0
			for k := range on.qm {
				moved = math.Max(moved, math.Abs(on.qm[k]-on.mq[k])/math.Sqrt(on.vq[k]))
			}
			if moved < 1e-3 && first == 0 {
				first = it
			}
		}
		if first == 0 {
			t.Fatalf("no convergence in 200 iterations (Newton: %v)", on.coupled != nil)
		}
		return first
	}
	g, h := make([]float64, np), make([]float64, np)
	checkFixed := func(b int, obs []Obs) {
		t.Helper()
		d.Expect(obs, on.qm, on.qv, g, h)
		for k := 0; k < np; k++ {
			if math.IsNaN(obs[k].Y) {
				continue
			}
			sd, p := math.Sqrt(on.qv[k]), on.pv[k]
			if r := (g[k] - (on.qm[k]-on.pm[k])/p) * on.qv[k]; math.Abs(r) > 1e-3*sd {
				t.Fatalf("bin %d product %d (Newton: %v): not stationary in the mean (%.3g sd)", b, k, on.coupled != nil, r/sd)
			}
			if l2 := math.Max(-h[k], on.opts.CurvatureFloor); math.Abs(on.l2[k]-l2) > 1e-3*(1+l2) {
				t.Fatalf("bin %d product %d (Newton: %v): site precision %v, target %v", b, k, on.coupled != nil, on.l2[k], l2)
			}
		}
	}
	var its [2]int
	var res BinResult
	for b := range c.data.Times[:20] {
		obs := c.data.Bin(b)
		if err := on.filt.Advance(c.data.Times[b]); err != nil {
			t.Fatal(err)
		}
		on.predicted(&res)
		on.initialSite(obs)
		copy(start1, on.l1)
		copy(start2, on.l2)
		coupled := on.coupled
		on.coupled = nil // CVI: the curvature's diagonal only
		its[1] += iterate(obs)
		checkFixed(b, obs)
		cviMean := append([]float64(nil), on.qm...)
		copy(on.l1, start1)
		copy(on.l2, start2)
		on.coupled = coupled
		its[0] += iterate(obs)
		checkFixed(b, obs)
		for k := 0; k < np; k++ {
			// The rule's expectation is piecewise smooth in the means:
			// nearby fixed points within its resolution.
			if sd := math.Sqrt(on.qv[k]); math.Abs(on.qm[k]-cviMean[k]) > 1e-2*sd {
				t.Fatalf("bin %d product %d: Newton mean %v, CVI %v (sd %v)", b, k, on.qm[k], cviMean[k], sd)
			}
		}
		if _, err := on.filt.Update(on.l1, on.l2); err != nil {
			t.Fatal(err)
		}
		on.warm = true
		for k := range obs {
			on.prevObserved[k] = !math.IsNaN(obs[k].Y)
		}
	}
	t.Logf("iterations over 20 bins: Newton %d, CVI %d", its[0], its[1])
	if its[0] >= its[1] {
		t.Errorf("Newton took %d iterations, CVI's diagonal update %d", its[0], its[1])
	}
}

// TestOnlineStepAllocs: a bin of the online refinement with diagonal
// diffusion sites (coarse first expectation, then the full rule) and a
// forecast allocate nothing once the Online is warm.
func TestOnlineStepAllocs(t *testing.T) {
	c := onlineCases(t)[5]
	on, err := NewOnline(c.m, c.lik, DefaultOnlineOptions())
	if err != nil {
		t.Fatal(err)
	}
	var res BinResult
	np := c.data.NP
	fm, fv, fc := make([]float64, np), make([]float64, np), make([]float64, np*np)
	b := 0
	step := func() {
		if err := on.Step(c.data.Times[b], c.data.Bin(b), &res); err != nil {
			t.Fatal(err)
		}
		if err := on.Forecast(c.data.Times[b]+1, fm, fv, fc); err != nil {
			t.Fatal(err)
		}
		b++
	}
	for b < 10 {
		step()
	}
	if a := testing.AllocsPerRun(40, step); a != 0 {
		t.Errorf("%v allocations per bin", a)
	}
}
