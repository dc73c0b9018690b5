package cvi

import (
	"math"
	"testing"

	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/filter/kernel"
)

// coupledCase is a small city for the coupled update: np products on the
// benchmark's grid and graph, nb hourly bins warm-started from the online
// path; without stockouts no product is censored (the diffusion then
// never acts and its curvature is diagonal).
func coupledCase(t *testing.T, np, nb int, stockouts bool) (*Engine, *filter.Sites) {
	t.Helper()
	on, bins := cityOnline(t, np, 9)
	data := &Data{NP: np, Times: make([]float64, nb)}
	warm := filter.NewSites(nb, np, false)
	var res BinResult
	for i := range data.Times {
		data.Times[i] = float64(i)
		obs := append([]Obs(nil), bins[i%len(bins)]...)
		if !stockouts {
			for k := range obs {
				obs[k] = Obs{Y: obs[k].Y, Supply: math.Inf(1)}
			}
		}
		data.Obs = append(data.Obs, obs...)
		if err := on.Step(data.Times[i], obs, &res); err != nil {
			t.Fatal(err)
		}
		l1, l2 := warm.Bin(i)
		copy(l1, res.Nat1)
		copy(l2, res.Nat2)
	}
	e, err := NewEngine(on.model, on.lik, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetSites(warm); err != nil {
		t.Fatal(err)
	}
	return e, warm
}

// TestCoupledStepIsCVIWithoutCoupling: where the diffusion cannot act (no
// product censored) the expectation's curvature is diagonal, and one
// coupled step gives CVI's diagonal step's sites, to 1e-9 relative (the
// conjugate gradients' one iteration and the mean solver's rounding).
func TestCoupledStepIsCVIWithoutCoupling(t *testing.T) {
	e, warm := coupledCase(t, coupledMinProducts+16, 12, false)
	if !e.switchCoupled() {
		t.Fatal("the city does not take the coupled update")
	}
	if _, _, err := e.Step(1); err != nil {
		t.Fatal(err)
	}
	if e.coupledSteps != 1 || e.cstate == nil || e.cstate.smoother {
		t.Fatal("the step was not the coupled one with the mean solver")
	}
	got := e.Sites()
	if err := e.SetSites(warm); err != nil {
		t.Fatal(err)
	}
	e.coupledOn = false
	if _, _, err := e.Step(1); err != nil {
		t.Fatal(err)
	}
	want := e.Sites()
	for _, p := range [][2][]float64{{got.Nat1, want.Nat1}, {got.Nat2, want.Nat2}} {
		for i, w := range p[1] {
			if d := math.Abs(p[0][i] - w); !(d <= 1e-9*(1+math.Abs(w))) {
				t.Fatalf("site entry %d: coupled %v, diagonal %v", i, p[0][i], w)
			}
		}
	}
}

// TestCoupledUpdateConverges: on a city with stockouts, where CVI's
// diagonal update needs its damping halved, Converge switches to the
// coupled update at its first damped step and converges
// from the online sites in less than half the diagonal update's CVI
// steps to the same ELBO within 1e-5 nats per observed cell (the coupled
// route stops by its step test, the diagonal one by the ELBO's change;
// both fixed points lie on the expectation's noise floor), with smoothed
// means within 0.25 posterior standard deviations of the diagonal
// update's. Skipped in -short (about 10 s on 2 cores).
func TestCoupledUpdateConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("a city's batch CVI, twice: about 10 s")
	}
	type run struct {
		iters      int
		elbo       float64
		mean, vars []float64
	}
	var runs [2]run
	var cells float64
	for i, diag := range []bool{false, true} {
		e, _ := coupledCase(t, 150, 36, true)
		cells = e.elboScale()
		e.DiagonalUpdate = diag
		n, elbo, err := e.Converge(1, 1e-9, 500)
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.Posterior()
		if err != nil {
			t.Fatal(err)
		}
		if took := e.coupledSteps > 0; took == diag {
			t.Fatalf("diagonal %v: coupled steps taken %v", diag, took)
		}
		runs[i] = run{n, elbo, p.Mean, p.Var}
	}
	c, d := runs[0], runs[1]
	t.Logf("coupled: %d steps, ELBO %.6f; diagonal: %d steps, ELBO %.6f", c.iters, c.elbo, d.iters, d.elbo)
	if !(2*c.iters < d.iters) {
		t.Errorf("coupled update took %d CVI steps, diagonal %d", c.iters, d.iters)
	}
	if !(math.Abs(c.elbo-d.elbo) <= 1e-5*cells) {
		t.Errorf("coupled update's ELBO %.6f, the diagonal update's %.6f: %.3g nats per observed cell apart", c.elbo, d.elbo, (c.elbo-d.elbo)/cells)
	}
	var worst float64
	for i := range c.mean {
		worst = math.Max(worst, math.Abs(c.mean[i]-d.mean[i])/math.Sqrt(d.vars[i]))
	}
	t.Logf("smoothed means within %.3g standard deviations", worst)
	if !(worst < 0.25) {
		t.Errorf("smoothed means differ by up to %.3g standard deviations", worst)
	}
}

// TestCoupledStopNearReference: on a city of 150 stations × 36 bins with
// stockouts (the coupled route), Converge stops by the step test
// (engine_coupled.go) at a state that meets it, in less than a third of
// the steps of a reference that runs 60 steps with the test off, at an
// ELBO within 1e-5 nats per observed cell of the reference's (measured:
// 2.3e-6), with smoothed means within 0.2 of the reference's posterior
// standard deviations (measured: 0.098) and variances within 10% (4%).
// About 6 s on 2 cores; skipped in -short.
func TestCoupledStopNearReference(t *testing.T) {
	if testing.Short() {
		t.Skip("a city's batch CVI, 60 steps and a short run: about 6 s")
	}
	ref, _ := coupledCase(t, 150, 36, true)
	ref.stopTestOff = true
	const refSteps = 60
	nr, refELBO, err := ref.Converge(1, 1e-9, refSteps)
	if err != nil {
		t.Fatal(err)
	}
	if nr != refSteps {
		t.Fatalf("the reference stopped after %d steps with the step test off", nr)
	}
	e, _ := coupledCase(t, 150, 36, true)
	n, elbo, err := e.Converge(1, 1e-9, refSteps)
	if err != nil {
		t.Fatal(err)
	}
	cells := e.elboScale()
	t.Logf("stopped after %d steps (%d coupled), ELBO %.6f, step %+v; reference ELBO %.6f, step %+v", n, e.coupledSteps, elbo, e.lastTest, refELBO, ref.lastTest)
	if e.coupledSteps == 0 || !e.lastTest.met() || !(3*n < refSteps) {
		t.Fatalf("did not stop by the coupled step test: %d steps, %d coupled, last test %+v", n, e.coupledSteps, e.lastTest)
	}
	if gap := refELBO - elbo; !(math.Abs(gap) <= 1e-5*cells) {
		t.Errorf("ELBO %.6f, reference %.6f: %.3g nats per observed cell apart", elbo, refELBO, gap/cells)
	}
	got, err := e.Posterior()
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Posterior()
	if err != nil {
		t.Fatal(err)
	}
	var dm, dv float64
	for i, w := range want.Mean {
		dm = math.Max(dm, math.Abs(got.Mean[i]-w)/math.Sqrt(want.Var[i]))
		dv = math.Max(dv, math.Abs(got.Var[i]/want.Var[i]-1))
	}
	t.Logf("smoothed means within %.3g sd of the reference's, variances within %.3g", dm, dv)
	if !(dm <= 0.2 && dv <= 0.1) {
		t.Errorf("smoothed means %.3g sd and variances %.3g from the reference's", dm, dv)
	}
}

// TestCoupledStepSmootherRoute: a temporal state the mean solver does not
// serve (Matérn-3/2 alone, the filter's unrolled 2-state chains) takes
// M⁻¹ by smoother passes, and without coupling its step is CVI's as well.
func TestCoupledStepSmootherRoute(t *testing.T) {
	on, bins := cityOnline(t, coupledMinProducts+16, 9)
	np, nb := on.np, 12
	m32, err := kernel.NewMatern32(4, 24)
	if err != nil {
		t.Fatal(err)
	}
	m, err := filter.NewModel(m32, nil, nil, np)
	if err != nil {
		t.Fatal(err)
	}
	data := &Data{NP: np, Times: make([]float64, nb)}
	for i := range data.Times {
		data.Times[i] = float64(i)
		for _, o := range bins[i] {
			data.Obs = append(data.Obs, Obs{Y: o.Y, Supply: math.Inf(1)})
		}
	}
	var sites [2]*filter.Sites
	for i, coupled := range []bool{true, false} {
		e, err := NewEngine(m, on.lik, data)
		if err != nil {
			t.Fatal(err)
		}
		e.coupledOn = coupled && e.switchCoupled()
		if _, _, err := e.Step(1); err != nil {
			t.Fatal(err)
		}
		if coupled && (e.coupledSteps != 1 || !e.cstate.smoother) {
			t.Fatal("the step was not the coupled one by smoother passes")
		}
		sites[i] = e.Sites()
	}
	for i, w := range sites[1].Nat1 {
		if d := math.Abs(sites[0].Nat1[i] - w); !(d <= 1e-9*(1+math.Abs(w))) {
			t.Fatalf("λ₁ entry %d: coupled %v, diagonal %v", i, sites[0].Nat1[i], w)
		}
	}
}
