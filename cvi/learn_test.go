package cvi

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/filter/kernel"
)

// exactLML is the Gaussian-likelihood log marginal likelihood of data
// under model m with noise variance s2, by the Kalman filter with exact
// Gaussian sites (validated against a dense GP in package filter).
func exactLML(t *testing.T, m *filter.Model, data *Data, s2 float64) float64 {
	t.Helper()
	s := filter.NewSites(len(data.Times), data.NP, false)
	for n := range data.Times {
		for k, o := range data.Bin(n) {
			if !math.IsNaN(o.Y) {
				s.SetGaussian(n, k, o.Y, s2)
			}
		}
	}
	var p filter.Posterior
	if err := filter.Filter(&p, m, data.Times, s); err != nil {
		t.Fatal(err)
	}
	return p.LogLik
}

// TestLearnGaussianIsTypeIIML: with a Gaussian likelihood the ELBO at the
// CVI fixed point is the exact log marginal likelihood, so learning must
// end at a stationary point of it: its finite-difference gradient in every
// hyperparameter vanishes there.
func TestLearnGaussianIsTypeIIML(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := testData(rng, 80, 2, math.Inf(1))
	k, _ := kernel.NewMatern32(0.5, 1.0)
	m, _ := filter.NewModel(k, nil, nil, 2)
	g, _ := NewGaussian(0.3)
	e, err := NewEngine(m, Factorised{g}, data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Learn(context.Background(), LearnOptions{Tol: 1e-12, GradTol: 1e-7})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v; params %v, noise %v", res, m.Params(nil), g.Variance())
	lml := exactLML(t, m, data, g.Variance())
	if math.Abs(res.ELBO-lml) > 1e-8*math.Abs(lml) {
		t.Errorf("ELBO %.12g, exact lml %.12g", res.ELBO, lml)
	}
	theta := append(m.Params(nil), g.Params(nil)...)
	const h = 1e-4
	for i := range theta {
		var f [2]float64
		for s, sign := range []float64{1, -1} {
			p := append([]float64(nil), theta...)
			p[i] += sign * h
			mm := m.Clone()
			if err := mm.SetParams(p[:2]); err != nil {
				t.Fatal(err)
			}
			gg, _ := NewGaussian(1)
			if err := gg.SetParams(p[2:]); err != nil {
				t.Fatal(err)
			}
			f[s] = exactLML(t, mm, data, gg.Variance())
		}
		grad := (f[0] - f[1]) / (2 * h)
		if math.Abs(grad) > 1e-3 {
			t.Errorf("d lml / d θ_%d = %.3g at the learned point, want ≈ 0", i, grad)
		}
	}
}

// TestLearnEndsOnTheFinePointRule checks that a DCGP-f fit with full
// sites, whose search uses the coarse LearnPoints rule, leaves the
// likelihood on the Points rule (the reported ELBO is the fine rule's ELBO
// of the final state), and that with diagonal sites the search uses the
// Points rule only.
func TestLearnEndsOnTheFinePointRule(t *testing.T) {
	e, lik := triangleEngine(t, 120, DiffusionOptions{Points: 64, LearnPoints: 8})
	if lik.zLearn == lik.zFine {
		t.Fatal("no separate learning rule")
	}
	fixed := map[string]bool{"likelihood.lengthscale": true, "likelihood.sink": true}
	var sawCoarse bool
	res, err := e.Learn(context.Background(), LearnOptions{Fixed: fixed, Progress: func(Progress) {
		sawCoarse = sawCoarse || lik.z == lik.zLearn
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !sawCoarse {
		t.Error("the search did not use the learning rule")
	}
	if lik.z != lik.zFine {
		t.Fatal("learning left the likelihood on the learning rule")
	}
	elbo, err := e.ELBO()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(elbo-res.ELBO) > 1e-12*math.Abs(elbo) {
		t.Errorf("reported ELBO %.12g, fine-rule ELBO of the final state %.12g", res.ELBO, elbo)
	}
	// Gauss–Newton curvature (full sites): the search stays on the coarse
	// rule.
	if res.SearchRule == res.FinalRule {
		t.Errorf("full sites: rules %q/%q: want the search on the coarse rule", res.SearchRule, res.FinalRule)
	}
	// Diagonal sites, exact curvature: the search runs on the fine rule
	// only, so the status is the fine rule's.
	ed, likd := triangleEngine(t, 120, DiffusionOptions{Points: 64, LearnPoints: 8, Sites: DiagonalSites})
	sawCoarse = false
	resd, err := ed.Learn(context.Background(), LearnOptions{Fixed: fixed, Progress: func(Progress) {
		sawCoarse = sawCoarse || likd.z == likd.zLearn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("diagonal sites: %s after %d iterations: gradient %.3g, final %.3g, test %.3g", resd.Status, resd.Iterations, resd.Gradient, resd.FinalGradient, resd.GradTol)
	if sawCoarse || resd.SearchRule != resd.FinalRule {
		t.Errorf("diagonal sites: rules %q/%q, coarse rule seen %v: want the search on the final rule only", resd.SearchRule, resd.FinalRule, sawCoarse)
	}
	if resd.Gradient != resd.FinalGradient {
		t.Errorf("diagonal sites: the test saw gradient %.6g, the final state has %.6g", resd.Gradient, resd.FinalGradient)
	}
	// With ℓ and π learned the fine rule is kept throughout.
	e2, lik2 := triangleEngine(t, 120, DiffusionOptions{Points: 64, LearnPoints: 8})
	sawCoarse = false
	if _, err := e2.Learn(context.Background(), LearnOptions{MaxIterations: 3, Progress: func(Progress) {
		sawCoarse = sawCoarse || lik2.z == lik2.zLearn
	}}); err != nil {
		t.Fatal(err)
	}
	if sawCoarse {
		t.Error("learning ℓ and π used the coarse rule")
	}
}

// nanBelow is a Gaussian likelihood whose expectation is NaN when the
// noise variance is below floor: a region of hyperparameters where the
// model cannot be evaluated.
type nanBelow struct {
	Factorised
	g     *Gaussian
	floor float64
}

func (l nanBelow) Expect(obs []Obs, mean, vars, grad, curv []float64) float64 {
	if l.g.Variance() < l.floor {
		return math.NaN()
	}
	return l.Factorised.Expect(obs, mean, vars, grad, curv)
}

// TestLearnInfeasibleTrialPointsBackOff: a trial point where the ELBO is
// NaN is an infeasible step, not an abort: learning returns the best
// feasible point, honestly not converged, since the likelihood wants a
// noise variance below the NaN floor.
func TestLearnInfeasibleTrialPointsBackOff(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := testData(rng, 80, 2, math.Inf(1))
	k, _ := kernel.NewMatern32(0.5, 1.0)
	m, _ := filter.NewModel(k, nil, nil, 2)
	g, _ := NewGaussian(0.3)
	const floor = 0.05 // the unconstrained optimum is σ² ≈ 0.0076
	e, err := NewEngine(m, nanBelow{Factorised{g}, g, floor}, data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Learn(context.Background(), LearnOptions{})
	if err != nil {
		t.Fatalf("learning aborted: %v", err)
	}
	t.Logf("%s: %s; σ² = %v", res.Status, res.Detail, g.Variance())
	if !(g.Variance() >= floor) || math.IsNaN(res.ELBO) {
		t.Errorf("ended at σ² = %v, ELBO %v", g.Variance(), res.ELBO)
	}
	if res.Converged {
		t.Errorf("reported converged at the infeasibility wall with gradient %.3g (test %.3g)", res.Gradient, res.GradTol)
	}
}

// TestOptimiserVariables: temporal lengthscales in time units are bounded
// below by MinLengthscale × the median bin spacing (a start below the
// bound moves to the median spacing), periodic lengthscales and periods
// are not, and the map to the stored parameters has the right derivative.
func TestOptimiserVariables(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := testData(rng, 60, 1, math.Inf(1))
	step := medianStep(data.Times)
	m32, _ := kernel.NewMatern32(1, 0.1*step) // starts below the bound
	per, _ := kernel.NewPeriodic(1, 0.2, 24, 3)
	qp, _ := kernel.NewQuasiPeriodic(1, 0.3, 12, 40, 2, 12)
	sum, _ := kernel.NewSum(m32, per, qp)
	m, _ := filter.NewModel(sum, nil, nil, 1)
	g, _ := NewGaussian(0.3)
	e, err := NewEngine(m, Factorised{g}, data)
	if err != nil {
		t.Fatal(err)
	}
	names := e.ParamNames()
	all := append(e.model.Params(nil), e.lik.Params(nil)...)
	free := make([]int, len(names))
	for i := range free {
		free[i] = i
	}
	pm := newParamMap(e, free, e.model.NumParams(), names, all, 0.5, nil)
	bounded := map[string]bool{"temporal.0.lengthscale": true, "temporal.2.matern_lengthscale": true}
	for j, n := range names {
		if got := pm.kind[j] == boundedLog; got != bounded[n] {
			t.Errorf("%s: bounded %v, want %v", n, got, bounded[n])
		}
		if bounded[n] {
			if pm.lo[j] != 0.5*step {
				t.Errorf("%s: bound %v, want %v", n, pm.lo[j], 0.5*step)
			}
			for _, u := range []float64{-50, -5, 0, 5} {
				if v := pm.value(j, u); !(v > pm.lo[j]) && u > -30 {
					t.Errorf("%s: θ(%v) = %v not above the bound", n, u, v)
				}
			}
		}
		if (n == "temporal.1.period" || n == "temporal.2.period") != (pm.sc[j] > 1) {
			t.Errorf("%s: scale %v", n, pm.sc[j])
		}
		// d raw/du against a central difference.
		u, h := pm.u0[j], 1e-6
		fd := (pm.raw(j, u+h) - pm.raw(j, u-h)) / (2 * h)
		if d := pm.dRaw(j, u); math.Abs(d-fd) > 1e-6*(1+math.Abs(fd)) {
			t.Errorf("%s: d raw/du %v, central difference %v", n, d, fd)
		}
	}
	if v := pm.value(1, pm.u0[1]); math.Abs(v-step) > 1e-12*step {
		t.Errorf("a lengthscale starting below the bound starts at %v, want the median spacing %v", v, step)
	}
}

// TestNumericalError: CVI at a point where the expectation is NaN fails
// with an ErrNumerical that names the bin, for callers to tell numerical
// trouble from malformed input.
func TestNumericalError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := testData(rng, 20, 2, math.Inf(1))
	k, _ := kernel.NewMatern32(0.5, 1.0)
	m, _ := filter.NewModel(k, nil, nil, 2)
	g, _ := NewGaussian(0.01)
	e, err := NewEngine(m, nanBelow{Factorised{g}, g, 0.05}, data)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.Converge(1, 1e-6, 10)
	if !errors.Is(err, ErrNumerical) || !errors.Is(err, filter.ErrNumerical) {
		t.Fatalf("got %v, want an ErrNumerical", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "cvi: bin ") || !strings.Contains(msg, "NaN") {
		t.Errorf("message %q", msg)
	}
}

// TestLearnFloors: on pure noise (its variance held at the truth, the
// lengthscale held) the ELBO drives a kernel's variance down from its
// start of 2 (to 0.12 here); with Floors it ends at or above the floor
// (0.5, to 1e-9 relative).
func TestLearnFloors(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	data := &Data{NP: 1, Times: make([]float64, 200), Obs: make([]Obs, 200)}
	for i := range data.Times {
		data.Times[i] = float64(i)
		data.Obs[i] = Obs{Y: rng.NormFloat64(), Supply: math.Inf(1)}
	}
	learned := func(floors []float64) float64 {
		k, _ := kernel.NewMatern32(2, 5)
		m, _ := filter.NewModel(k, nil, nil, 1)
		g, _ := NewGaussian(1) // the noise's true variance, held
		e, err := NewEngine(m, Factorised{g}, data)
		if err != nil {
			t.Fatal(err)
		}
		fixed := map[string]bool{}
		for _, n := range e.ParamNames() {
			if !strings.HasSuffix(n, "variance") || strings.HasPrefix(n, "likelihood") {
				fixed[n] = true
			}
		}
		if _, err := e.Learn(context.Background(), LearnOptions{Floors: floors, Fixed: fixed}); err != nil {
			t.Fatal(err)
		}
		names := e.ParamNames()
		for i, n := range names {
			if strings.HasSuffix(n, "variance") && strings.HasPrefix(n, "temporal") {
				return softplusTest(m.Params(nil)[i])
			}
		}
		t.Fatalf("no kernel variance in %v", names)
		return 0
	}
	free := learned(nil)
	floored := learned([]float64{0.5})
	t.Logf("kernel variance learned on noise: %.3g free, %.3g floored at 0.5", free, floored)
	if free > 0.25 {
		t.Fatalf("free variance %.3g: the data do not drive it to 0, the test would not tell", free)
	}
	if floored < 0.5*(1-1e-9) {
		t.Errorf("floored variance %.3g below its floor 0.5", floored)
	}
}

func softplusTest(x float64) float64 { return math.Log1p(math.Exp(x)) }
