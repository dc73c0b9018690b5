package cvi

import (
	"context"
	"fmt"
	"math"
)

// LearnOptions configures hyperparameter learning.
type LearnOptions struct {
	// MaxIterations bounds the optimiser's major iterations (default 200).
	MaxIterations int
	// GradTol is the optimality test: learning has converged when every
	// component of the ELBO's gradient in the optimiser's variables (log of
	// each positive parameter; see Learn) is at most GradTol·n_obs in
	// magnitude, n_obs the number of observed cells (default 1e-3).
	GradTol float64
	// Tol ends learning as stalled (not converged) when the ELBO improves
	// by less than Tol·(1+|ELBO|) over 3 consecutive iterations while the
	// gradient is still above the GradTol test (default 1e-6).
	Tol float64
	// Beta is the CVI damping at the start of every inner solve (default 1;
	// halved automatically on a step that lowers the ELBO).
	Beta float64
	// InnerTol and InnerMax control the inner CVI solve at each
	// hyperparameter setting (defaults 1e-6 and 50).
	InnerTol float64
	InnerMax int
	// Fixed names parameters to hold (names from ParamNames, e.g.
	// "temporal.lengthscale" or "likelihood.variance").
	Fixed map[string]bool
	// FDStep is the central-difference step for kernel gradients in the
	// optimiser's variables, i.e. a relative change of the parameter
	// (default 1e-5).
	FDStep float64
	// MinLengthscale bounds every temporal lengthscale (in time units:
	// Matérn lengthscales, the quasi-periodic envelope's) below by this
	// fraction of the median spacing of the data's bins (default 0.5;
	// negative: no bound). Periodic lengthscales are relative to the
	// period and are not bounded.
	MinLengthscale float64
	// Floors[i] > 0 bounds parameter i (ParamNames order, natural units:
	// a variance, not its stored softplus⁻¹) below: the search runs in
	// u = log(θ − Floors[i]). The daemon's re-learning floors every
	// variance so that one odd window cannot switch a component off (a
	// variance near 0 has a vanishing gradient in log θ and never comes
	// back). nil or 0: no floor.
	Floors []float64
	// NoCoarse keeps the likelihood's final expectation rule during the
	// search too (see DiffusionOptions.LearnPoints); it always does where
	// the CVI fixed point is stationary (diagonal diffusion sites).
	NoCoarse bool
	// Fallback continues learning with central differences of the ELBO
	// when the search with the envelope gradient stops with the gradient
	// above the test (see Learn); 2 CVI solves per free parameter per
	// evaluation.
	Fallback bool
	// Progress, if set, is called after every major iteration.
	Progress func(Progress)
}

// Progress describes one major iteration of Learn.
type Progress struct {
	Iter int
	// ELBO at the iterate, under Rule.
	ELBO float64
	// Gradient is max_i |∂ELBO/∂u_i| in the optimiser's variables, and
	// GradTol the threshold it must reach (GradTol·n_obs).
	Gradient, GradTol float64
	// Rule names the expectation rule the ELBO was computed with when the
	// likelihood has more than one ("16-point rule"); empty otherwise.
	Rule string
}

// Stopping statuses of Learn (Result.Status).
const (
	// StatusConverged: the optimality test passed, max_i |∂ELBO/∂u_i| ≤
	// GradTol·n_obs at the returned hyperparameters (search rule).
	StatusConverged = "converged"
	// StatusStalled: the ELBO improved by less than Tol·(1+|ELBO|) over 3
	// iterations but the gradient is still above the test; the ELBO's
	// noise floor (inner CVI tolerance, quadrature) hides further progress.
	StatusStalled = "stalled"
	// StatusLineSearch: the line search found no point that raises the
	// ELBO and satisfies the curvature condition along the search
	// direction (within 10 trial points, or the step underflowed) at a
	// point where the gradient is above the test: the ELBO's noise floor,
	// infeasible trial points (Detail says), or a gradient that disagrees
	// with the ELBO (the diffusion likelihood's Gauss–Newton fixed point;
	// see LearnOptions.Fallback).
	StatusLineSearch = "line search failed"
	// StatusMaxIterations: MaxIterations iterations without passing the
	// test.
	StatusMaxIterations = "max iterations"
	// StatusOptimiser: the optimiser failed otherwise (Detail has its
	// error); the fit is at the best point seen.
	StatusOptimiser = "optimiser stopped"
	// StatusNothingToLearn: every parameter is fixed; the sites were fitted
	// at the given hyperparameters.
	StatusNothingToLearn = "nothing to learn"
)

// Result summarises a learning run.
type Result struct {
	// ELBO of the final state, under FinalRule.
	ELBO       float64
	Iterations int
	Evals      int
	CVISteps   int
	// Infeasible counts the trial points rejected as infeasible.
	Infeasible int
	// Converged reports Status == StatusConverged (or nothing to learn).
	Converged bool
	// Status is one of the Status constants; Detail says it with numbers.
	Status string
	Detail string
	// Gradient is max_i |∂ELBO/∂u_i| at the returned hyperparameters under
	// the search rule (what the optimality test saw), GradTol the test's
	// threshold GradTol·n_obs, and FinalGradient the same norm at the
	// final state under FinalRule (equal to Gradient when the likelihood
	// has one rule).
	Gradient, GradTol, FinalGradient float64
	// Fallback reports that the search continued with central differences
	// of the ELBO after the envelope gradient stopped it (see Learn); the
	// Gradient and FinalGradient are then such differences.
	Fallback bool
	// SearchELBO is the ELBO at the returned hyperparameters under
	// SearchRule (the last progress line's rule); ELBO differs from it by
	// the rule switch only.
	SearchELBO            float64
	SearchRule, FinalRule string
	// Unmoved names the learned parameters that ended within a relative
	// 1e-6 of their starting values (the sink: within 1e-6).
	Unmoved []string
	// Warnings are for the user: unmoved parameters, a final gradient
	// above the test after the rule switch, lengthscales at their bound.
	Warnings []string
}

func (o *LearnOptions) defaults() {
	if o.MaxIterations <= 0 {
		o.MaxIterations = 200
	}
	if o.GradTol <= 0 {
		o.GradTol = 1e-3
	}
	if o.Tol <= 0 {
		o.Tol = 1e-6
	}
	if o.Beta <= 0 || o.Beta > 1 {
		o.Beta = 1
	}
	if o.InnerTol <= 0 {
		o.InnerTol = 1e-6
	}
	if o.InnerMax <= 0 {
		o.InnerMax = 50
	}
	if o.FDStep <= 0 {
		o.FDStep = 1e-5
	}
	if o.MinLengthscale == 0 {
		o.MinLengthscale = 0.5
	}
}

// ParamNames returns the names of every learnable parameter: the model's
// ("temporal.…", "product.…") then the likelihood's ("likelihood.…").
func (e *Engine) ParamNames() []string {
	names := e.model.ParamNames()
	for _, n := range e.lik.ParamNames() {
		names = append(names, "likelihood."+n)
	}
	return names
}

// Learn maximises the ELBO over the free hyperparameters with L-BFGS.
// Each evaluation solves CVI to convergence at the trial hyperparameters
// (warm-started from the previous sites) and returns the ELBO there; its
// gradient follows from the envelope theorem: at the CVI fixed point the
// ELBO's derivative in a kernel hyperparameter is that of the pseudo-data
// log marginal likelihood log Z̃ with the sites held fixed (obtained by
// central differences of filter passes, run in parallel), and in a
// likelihood parameter that of Σ E_q[log p(y|f)] with q held fixed
// (analytic).
//
// The optimiser's variables are u = log θ for every positive parameter θ
// (variances, lengthscales, periods, σ², ℓ_diff), u = log(θ − θ_min) for
// temporal lengthscales bounded below by θ_min = MinLengthscale × the
// median bin spacing, and the raw value for the sink (tanh|u|, already
// scale-free). A change of units of the demand or of time is then a shift
// of u, to which L-BFGS is invariant, so the search does not depend on
// the units. The stored representation (softplus⁻¹) is unchanged.
//
// A trial point where the hyperparameters are invalid, or the ELBO or its
// gradient is NaN or infinite (or CVI fails there), is infeasible: the
// line search sees +Inf and backs off, and the sites return to the last
// feasible point's. Learning ends at the best point seen, with
// Result.Status saying why it stopped (see the Status constants).
func (e *Engine) Learn(ctx context.Context, opts LearnOptions) (Result, error) {
	l := newLearner(ctx, e, opts)
	defer l.close()
	if len(l.free) == 0 {
		return l.fitFixed()
	}
	r, err := l.search()
	if l.evalErr != nil {
		return l.res, l.evalErr
	}
	if l.bestX == nil {
		return l.res, fmt.Errorf("cvi: learning failed: no finite ELBO at the starting hyperparameters (%v)", err)
	}
	if err := l.finalSolve(); err != nil {
		return l.res, err
	}
	if r != nil {
		l.res.Iterations = r.Stats.MajorIterations
	}
	l.status(r, err)
	l.warn()
	return l.res, nil
}

// learner is one run of Learn: the engine, the free parameters and the
// optimiser's variables for them, the state the optimiser's callbacks
// share (the last evaluation, the best point, the sites of the last
// feasible point) and the Result being filled in.
type learner struct {
	ctx   context.Context
	e     *Engine
	opts  LearnOptions
	names []string
	all   []float64 // every parameter at the start (unconstrained)
	free  []int     // indices into all of the parameters learned
	nm    int       // the model's parameters come first
	nobs  int       // observed cells
	pm    *paramMap
	x0    []float64 // the optimiser's start
	res   Result
	rec   *recorder

	coarse   SearchRuler // the likelihood's search rule, if it has one
	coarseOn bool
	fdMode   bool // the gradient is a central difference of the ELBO (LearnOptions.Fallback)

	diag0 bool // the engine's DiagonalUpdate before Learn

	lastX, lastG []float64
	lastF        float64
	evalErr      error // the context's: stops learning
	bestELBO     float64
	bestX, bestG []float64
	// Sites of the last feasible evaluation, restored after an infeasible
	// one so that the next solve starts from sane sites.
	good1, good2 []float64
}

// newLearner prepares a run: which parameters are free, what the
// likelihood must compute for them, and its search rule switched on.
func newLearner(ctx context.Context, e *Engine, opts LearnOptions) *learner {
	opts.defaults()
	l := &learner{ctx: ctx, e: e, opts: opts, nm: e.model.NumParams(), names: e.ParamNames(), all: e.Params()}
	for i, n := range l.names {
		if !opts.Fixed[n] {
			l.free = append(l.free, i)
		}
	}
	if h, ok := e.lik.(ParamHolder); ok {
		held := make([]bool, e.lik.NumParams())
		for i := range held {
			held[i] = opts.Fixed[l.names[l.nm+i]]
		}
		h.HoldParams(held)
	}
	// Learning keeps CVI's diagonal update: its warm-started inner solves
	// need few steps, and the coupled update's dearer ones and memory did
	// not pay there (500 stations × 14 days, a staged DCGP fit: 131 s of
	// CPU and 450 MB with it, 117 s and 214 MB without).
	l.diag0, e.DiagonalUpdate = e.DiagonalUpdate, true
	e.wantPG = false
	for _, i := range l.free {
		if i >= l.nm {
			e.wantPG = true
		}
	}
	// A likelihood with a coarser expectation for the search uses it until
	// the final solve at the learned hyperparameters, unless the fixed
	// point is stationary (see searchesFinalRule).
	l.coarse, _ = e.lik.(SearchRuler)
	if l.coarse != nil && len(l.free) > 0 && !opts.NoCoarse && !l.searchesFinalRule() {
		final := l.coarse.RuleName()
		l.coarse.SetSearch(true)
		// Only a rule that differs from the final one is a coarse stage
		// (learn_points = points, or ℓ and π learned, keep one rule).
		if l.coarse.RuleName() != final {
			e.invalidate()
			l.coarseOn = true
		} else {
			l.coarse.SetSearch(false)
		}
	}
	l.res.SearchRule = ruleName(e.lik)
	return l
}

// close returns the likelihood to its final rule and the engine to its
// plain expectation passes and its own site update (on every return from
// Learn).
func (l *learner) close() {
	l.fine()
	l.e.wantPG = false
	l.e.DiagonalUpdate = l.diag0
}

// fine switches the likelihood back to its final expectation rule.
func (l *learner) fine() {
	if l.coarseOn {
		l.coarse.SetSearch(false)
		l.e.invalidate()
		l.coarseOn = false
	}
}

// fitFixed is Learn with every parameter fixed: the sites are fitted at
// the given hyperparameters.
func (l *learner) fitFixed() (Result, error) {
	n, elbo, err := l.e.Converge(l.opts.Beta, l.opts.InnerTol, l.opts.InnerMax)
	l.res.ELBO, l.res.SearchELBO, l.res.CVISteps, l.res.Converged = elbo, elbo, n, err == nil
	l.res.Status, l.res.Detail = StatusNothingToLearn, "every hyperparameter is fixed"
	l.res.FinalRule = l.res.SearchRule
	return l.res, err
}

// set sets the engine's parameters at the optimiser's point x.
func (l *learner) set(x []float64) error {
	p := append([]float64(nil), l.all...)
	for j, i := range l.free {
		p[i] = l.pm.raw(j, x[j])
		if math.IsNaN(p[i]) || math.IsInf(p[i], 0) {
			return fmt.Errorf("cvi: %s out of range", l.names[i])
		}
	}
	return l.e.SetParams(p)
}

// infeasible records the last evaluation as infeasible (+Inf to the line
// search) and restores the last feasible point's sites.
func (l *learner) infeasible() {
	l.res.Infeasible++
	l.rec.infeasible++
	l.lastF = math.Inf(1)
	for j := range l.lastG {
		l.lastG[j] = 0
	}
	copy(l.e.sites.Nat1, l.good1)
	copy(l.e.sites.Nat2, l.good2)
	l.e.invalidate()
}
