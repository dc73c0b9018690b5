package cvi

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"
)

// sparseRoute sets d's sparse expectation's point loop: fused or the
// reference (mfPoint, mfChain, mfChainSparse), and the points in two
// halves or in one; it returns a function restoring d's routes.
func sparseRoute(d *Diffusion, fused, split bool) func() {
	old := d.opts.Routes
	d.opts.Routes.UnfusedPoints = !fused
	d.opts.Routes.SplitMinProducts = math.MaxInt
	if split {
		d.opts.Routes.SplitMinProducts = 1
	}
	return func() { d.opts.Routes = old }
}

// TestSparseFusedMatches: the fused point loop (per-column sums, the
// gradient's excess terms by complement) and the points summed in two
// halves give the reference point loop's E, gradient and curvature on the
// pattern, to 1e-12 relative to the largest entry (the same terms added
// in other orders), on a city where about a third of the stations can be
// in excess, some of them at only part of the points.
func TestSparseFusedMatches(t *testing.T) {
	t.Parallel()
	const np = 300
	on, bins := cityOnline(t, np, 3)
	d := on.lik.(*Diffusion)
	closedForm(d, false) // the point loop's own sums, term by term
	mean, vars := make([]float64, np), make([]float64, np)
	for trial, obs := range bins[:4] {
		for k := range obs {
			// Means from well above to below the supplies: stations in
			// excess at every point, at some and at none.
			mean[k] = obs[k].Y + 1.5 - 0.5*float64((k+trial)%5)
			vars[k] = 0.5 + 0.01*float64(k%7)
		}
		type result struct {
			e    float64
			grad []float64
			curv []float64
		}
		run := func(fused, split bool) result {
			defer sparseRoute(d, fused, split)()
			r := result{grad: make([]float64, np)}
			e, hs, ok := d.expectCoupledSparse(obs, mean, vars, r.grad, false)
			if !ok || hs == nil {
				t.Fatal("no sparse coupled curvature")
			}
			r.e, r.curv = e, append([]float64(nil), hs.val...)
			return r
		}
		ref := run(false, false)
		run(true, false)
		partial := 0
		for _, k := range d.mf.cand {
			if n := d.cs.fs.nexc[k]; n > 0 && n < int32(2*d.z.RawMatrix().Rows) {
				partial++
			}
		}
		for _, v := range []struct{ fused, split bool }{{true, false}, {false, true}, {true, true}} {
			t.Run(fmt.Sprintf("bin%d/fused=%v/split=%v", trial, v.fused, v.split), func(t *testing.T) {
				got := run(v.fused, v.split)
				if math.Abs(got.e-ref.e) > 1e-12*math.Abs(ref.e) {
					t.Fatalf("E %v, reference %v", got.e, ref.e)
				}
				gs := 0.0
				for _, x := range ref.grad {
					gs = math.Max(gs, math.Abs(x))
				}
				for a := range ref.grad {
					if math.Abs(got.grad[a]-ref.grad[a]) > 1e-12*gs {
						t.Fatalf("gradient %d: %v, reference %v", a, got.grad[a], ref.grad[a])
					}
				}
				cs, off := 0.0, 0
				for _, x := range ref.curv {
					cs = math.Max(cs, math.Abs(x))
				}
				for p := range ref.curv {
					if math.Abs(got.curv[p]-ref.curv[p]) > 1e-12*cs {
						t.Fatalf("curvature entry %d: %v, reference %v", p, got.curv[p], ref.curv[p])
					}
					if ref.curv[p] != 0 {
						off++
					}
				}
				if off <= np {
					t.Fatal("no coupling in the bin: the test checks nothing")
				}
			})
		}
		if partial == 0 {
			t.Fatalf("bin %d: no station in excess at only part of the points: the complement sums are not checked", trial)
		}
	}
}

// TestOnlineSparseFusedMatches: over 24 bins of a 300-station city (100
// stations with finite supply, so the point-by-point route), the online
// refinement with the fused point loop in two halves gives the reference
// loop's steps, filtered means, variances, sites and 6-bin forecasts to
// 1e-12 relative.
func TestOnlineSparseFusedMatches(t *testing.T) {
	t.Parallel()
	const np = 300
	ref, bins := cityOnline(t, np, 11)
	fast, _ := cityOnline(t, np, 11)
	// The point loop's own sums, term by term: the reference loop in one
	// half, the fused one in two.
	rd, fd := ref.lik.(*Diffusion), fast.lik.(*Diffusion)
	closedForm(rd, false)
	closedForm(fd, false)
	sparseRoute(rd, false, false)
	sparseRoute(fd, true, true)
	if !ref.sparse || !fast.sparse {
		t.Fatal("the city does not take the sparse route")
	}
	var rr, rf BinResult
	rm, rv, fm, fv := make([]float64, np), make([]float64, np), make([]float64, np), make([]float64, np)
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*math.Max(1, math.Abs(x)) }
	for b, obs := range bins[:24] {
		tb := float64(b + 1)
		err := ref.Step(tb, obs, &rr)
		if err == nil {
			err = ref.ForecastSteps(1, 6, rm, rv, nil, func(int) {})
		}
		if err != nil {
			t.Fatal(err)
		}
		err = fast.Step(tb, obs, &rf)
		if err == nil {
			err = fast.ForecastSteps(1, 6, fm, fv, nil, func(int) {})
		}
		if err != nil {
			t.Fatal(err)
		}
		if rr.Steps != rf.Steps {
			t.Fatalf("bin %d: reference %d steps, fused %d", b, rr.Steps, rf.Steps)
		}
		for _, c := range []struct {
			name string
			x, y []float64
		}{{"mean", rr.Mean, rf.Mean}, {"var", rr.Var, rf.Var}, {"nat1", rr.Nat1, rf.Nat1}, {"nat2", rr.Nat2, rf.Nat2}, {"forecast mean", rm, fm}, {"forecast var", rv, fv}} {
			for k := range c.x {
				if !near(c.x[k], c.y[k]) {
					t.Fatalf("bin %d product %d %s: reference %v, fused %v", b, k, c.name, c.x[k], c.y[k])
				}
			}
		}
	}
}

// TestSplitLeavesNoGoroutine: the goroutine that sums the second half of
// the points ends before the expectation returns, while its likelihood is
// still in use (no goroutine per Online is left behind by a daemon that
// rebuilds its models, whenever the garbage collector runs). It waits up
// to 10 s for the count of goroutines to come back to what it was before
// three Onlines each stepped a bin in two halves.
func TestSplitLeavesNoGoroutine(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: the halves run on the caller's goroutine")
	}
	before := runtime.NumGoroutine()
	var keep []*Online
	for i := 0; i < 3; i++ {
		on, bins := cityOnline(t, 300, uint64(i+1))
		d := on.lik.(*Diffusion)
		sparseRoute(d, true, true)
		var res BinResult
		if err := on.Step(1, bins[0], &res); err != nil {
			t.Fatal(err)
		}
		if d.mf.split == nil {
			t.Fatal("the points were not split")
		}
		keep = append(keep, on)
	}
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(keep)
	if n > before {
		t.Fatalf("%d goroutines, %d before the Onlines stepped: a split goroutine outlives its expectation", n, before)
	}
}

// TestPruneCandMatches: dropping the stations no point can put in excess
// leaves the sparse expectation's E, gradient and curvature as they were
// to 1e-12 relative to the largest entry, on a city where every station
// has a finite supply and most are far below it (the excess sets then
// shrink below 64 stations: the per-set sums apply).
func TestPruneCandMatches(t *testing.T) {
	t.Parallel()
	const np = 300
	on, bins := cityOnline(t, np, 5)
	d := on.lik.(*Diffusion)
	closedForm(d, false) // the point loop's own sums, term by term
	mean, vars := make([]float64, np), make([]float64, np)
	for trial, obs := range bins[:4] {
		for k := range obs {
			if math.IsInf(obs[k].Supply, 1) {
				obs[k].Supply = obs[k].Y + 2 + 3*float64(trial/2) + float64(k%9)
			}
			if trial >= 2 && obs[k].Censored && k%9 != 0 {
				// Fewer stocked out: at most 64 candidates remain.
				obs[k].Y, obs[k].Censored = obs[k].Supply-6, false
			}
			mean[k] = obs[k].Y + 0.3*float64(trial)
			vars[k] = 0.5 + 0.2*float64(k%7)
		}
		run := func(prune bool) (float64, []float64, []float64, int) {
			d.opts.Routes.KeepCandidates = !prune
			grad := make([]float64, np)
			e, hs, ok := d.expectCoupledSparse(obs, mean, vars, grad, false)
			if !ok || hs == nil {
				t.Fatal("no sparse coupled curvature")
			}
			return e, grad, append([]float64(nil), hs.val...), len(d.mf.cand)
		}
		e0, g0, c0, n0 := run(false)
		e1, g1, c1, n1 := run(true)
		if n1 == n0 || n1 == 0 {
			t.Fatalf("bin %d: %d of %d candidates kept: the test checks nothing", trial, n1, n0)
		}
		static := len(d.cs.fs.static)
		if trial < 2 && static == 0 {
			// Pruned, the point-by-point route sums the stations no excess
			// reaches in closed form: checked against the points here.
			t.Fatalf("bin %d: no static station", trial)
		}
		if math.Abs(e1-e0) > 1e-12*math.Abs(e0) {
			t.Fatalf("bin %d: E %v, without pruning %v", trial, e1, e0)
		}
		gs, cs := 0.0, 0.0
		for _, x := range g0 {
			gs = math.Max(gs, math.Abs(x))
		}
		for _, x := range c0 {
			cs = math.Max(cs, math.Abs(x))
		}
		for a := range g0 {
			if math.Abs(g1[a]-g0[a]) > 1e-12*gs {
				t.Fatalf("bin %d gradient %d: %v, without pruning %v", trial, a, g1[a], g0[a])
			}
		}
		for p := range c0 {
			if math.Abs(c1[p]-c0[p]) > 1e-12*cs {
				t.Fatalf("bin %d curvature entry %d: %v, without pruning %v", trial, p, c1[p], c0[p])
			}
		}
		t.Logf("bin %d: %d of %d stations with finite supply can be in excess, %d static", trial, n1, n0, static)
	}
}
