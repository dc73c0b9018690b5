package cvi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/optimize"

	"github.com/dcgpd/dcgpd/filter"
)

// LearnOptions configures hyperparameter learning.
type LearnOptions struct {
	// MaxIterations bounds the optimiser's major iterations (default 200).
	MaxIterations int
	// Tol stops learning when the ELBO improves by less than
	// Tol·(1+|ELBO|) over 3 consecutive iterations (default 1e-6).
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
	// FDStep is the central-difference step for kernel gradients in
	// unconstrained units (default 1e-5).
	FDStep float64
	// NoCoarse keeps the likelihood's final expectation rule during the
	// search too (see DiffusionOptions.LearnPoints).
	NoCoarse bool
	// Progress, if set, is called after every major iteration.
	Progress func(iter int, elbo float64)
}

// Result summarises a learning run.
type Result struct {
	ELBO       float64
	Iterations int
	Evals      int
	CVISteps   int
	Converged  bool
	Status     string
}

func (o *LearnOptions) defaults() {
	if o.MaxIterations <= 0 {
		o.MaxIterations = 200
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
}

// ParamNames returns the names of every learnable parameter: the model's
// ("temporal.…", "product.…") then the likelihood's ("likelihood.…").
func (e *Engine) ParamNames() []string {
	names := e.Model.ParamNames()
	for _, n := range e.Lik.ParamNames() {
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
// (analytic). This needs far fewer iterations than the reference's one
// Adam step per CVI step, and stops on convergence.
func (e *Engine) Learn(ctx context.Context, opts LearnOptions) (Result, error) {
	opts.defaults()
	nm := e.Model.NumParams()
	names := e.ParamNames()
	all := append(e.Model.Params(nil), e.Lik.Params(nil)...)
	var free []int
	for i, n := range names {
		if !opts.Fixed[n] {
			free = append(free, i)
		}
	}
	if h, ok := e.Lik.(interface{ HoldParams([]bool) }); ok {
		held := make([]bool, e.Lik.NumParams())
		for i := range held {
			held[i] = opts.Fixed[names[nm+i]]
		}
		h.HoldParams(held)
	}
	var res Result
	e.wantPG = false
	for _, i := range free {
		if i >= nm {
			e.wantPG = true
		}
	}
	defer func() { e.wantPG = false }()
	// A likelihood with a coarser expectation for the search uses it until
	// the final solve at the learned hyperparameters.
	coarse, _ := e.Lik.(interface{ setLearning(bool) })
	coarseOn := false
	fine := func() {
		if coarseOn {
			coarse.setLearning(false)
			e.Invalidate()
			coarseOn = false
		}
	}
	defer fine() // on early returns
	if coarse != nil && len(free) > 0 && !opts.NoCoarse {
		coarse.setLearning(true)
		e.Invalidate()
		coarseOn = true
	}
	if len(free) == 0 {
		n, elbo, err := e.Converge(opts.Beta, opts.InnerTol, opts.InnerMax)
		res.ELBO, res.CVISteps, res.Converged, res.Status = elbo, n, err == nil, "nothing to learn"
		return res, err
	}
	set := func(x []float64) error {
		p := append([]float64(nil), all...)
		for j, i := range free {
			p[i] = x[j]
		}
		if err := e.Model.SetParams(p[:nm]); err != nil {
			return err
		}
		if err := e.Lik.SetParams(p[nm:]); err != nil {
			return err
		}
		e.fresh = false
		return nil
	}
	var (
		lastX    []float64
		lastF    float64
		lastG    []float64
		evalErr  error
		bestELBO = math.Inf(-1)
		bestX    []float64
	)
	rec := &recorder{f: opts.Progress, improve: math.Inf(1)}
	eval := func(x []float64) {
		if lastX != nil && equal(x, lastX) {
			return
		}
		lastX = append(lastX[:0], x...)
		lastG = make([]float64, len(free))
		if err := ctx.Err(); err != nil {
			evalErr, lastF = err, math.Inf(1)
			return
		}
		if err := set(x); err != nil {
			lastF = math.Inf(1)
			return
		}
		res.Evals++
		n, elbo, err := e.Converge(opts.Beta, rec.innerTol(opts.InnerTol), opts.InnerMax)
		res.CVISteps += n
		if err != nil || math.IsNaN(elbo) {
			lastF = math.Inf(1)
			return
		}
		lastF = -elbo
		if elbo > bestELBO {
			bestELBO, bestX = elbo, append(bestX[:0], x...)
		}
		g, err := e.gradient(free, nm, opts.FDStep)
		if err != nil {
			lastF = math.Inf(1)
			return
		}
		for j := range g {
			lastG[j] = -g[j]
		}
	}
	// The ELBO at a CVI fixed point carries noise of the order of the
	// inner tolerance, so near the optimum the line search can probe one
	// point over and over: stop when it has not completed an iteration in
	// maxProbe evaluations.
	const maxProbe = 4
	problem := optimize.Problem{
		Func: func(x []float64) float64 { eval(x); rec.probes++; return lastF },
		Grad: func(grad, x []float64) { eval(x); copy(grad, lastG) },
		Status: func() (optimize.Status, error) {
			if rec.probes > maxProbe {
				return stalled, nil
			}
			return optimize.NotTerminated, nil
		},
	}
	x0 := make([]float64, len(free))
	for j, i := range free {
		x0[j] = all[i]
	}
	settings := &optimize.Settings{
		MajorIterations: opts.MaxIterations,
		Converger:       &optimize.FunctionConverge{Relative: opts.Tol, Absolute: opts.Tol, Iterations: 3},
		Recorder:        rec,
	}
	r, err := optimize.Minimize(problem, x0, settings, &optimize.LBFGS{})
	if evalErr != nil {
		return res, evalErr
	}
	if bestX == nil {
		return res, fmt.Errorf("cvi: learning failed: no finite ELBO (%v)", err)
	}
	// Leave the engine at the best point seen, with converged sites of the
	// final expectation rule.
	if err := set(bestX); err != nil {
		return res, err
	}
	fine()
	n, elbo, cerr := e.Converge(opts.Beta, opts.InnerTol, opts.InnerMax)
	res.CVISteps += n
	res.ELBO = elbo
	if r != nil {
		res.Iterations = r.Stats.MajorIterations
		res.Status = r.Status.String()
		res.Converged = r.Status == optimize.FunctionConvergence || r.Status == optimize.GradientThreshold || r.Status == stalled
	}
	if cerr != nil {
		return res, cerr
	}
	if err != nil && !errors.Is(err, optimize.ErrLinesearcherFailure) && r == nil {
		return res, fmt.Errorf("cvi: optimiser: %w", err)
	}
	return res, nil
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// gradient returns dELBO/dθ for the free parameters at the current
// (converged) state.
func (e *Engine) gradient(free []int, nm int, h float64) ([]float64, error) {
	g := make([]float64, len(free))
	var kern []int // positions in free of model parameters
	for j, i := range free {
		if i < nm {
			kern = append(kern, j)
		}
	}
	if len(kern) > 0 {
		if err := e.kernelGradient(free, kern, h, g); err != nil {
			return nil, err
		}
	}
	if len(kern) < len(free) {
		lg := make([]float64, e.Lik.NumParams())
		_, fused := e.Lik.(fusedLikelihood)
		if e.wantPG && fused && e.fresh && e.evaluated {
			// The last expectation pass, at this very posterior, summed it.
			copy(lg, e.pgrad)
		} else {
			np := e.Data.NP
			for i, n := range e.bins {
				e.Lik.ExpectParamGrad(e.Data.Bin(n), e.post.Mean[i*np:(i+1)*np], e.binCov(i), lg)
			}
		}
		for j, i := range free {
			if i >= nm {
				g[j] = lg[i-nm]
			}
		}
	}
	return g, nil
}

// kernelGradient fills g[j] for j in kern with the central difference of
// log Z̃ in model parameter free[j], sites fixed, on all cores.
func (e *Engine) kernelGradient(free, kern []int, h float64, g []float64) error {
	base := e.Model.Params(nil)
	workers := min(runtime.GOMAXPROCS(0), len(kern))
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	// Each worker keeps its model clone and filter buffers across calls:
	// a fit differentiates log Z̃ at every evaluation.
	if len(e.gradWork) > 0 && e.gradWork[0].src != e.Model {
		e.gradWork = nil // the engine's model was replaced
	}
	for len(e.gradWork) < workers {
		e.gradWork = append(e.gradWork, &gradWorker{src: e.Model, m: e.Model.Clone()})
	}
	for w := 0; w < workers; w++ {
		gw := e.gradWork[w]
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := gw.m
			post := &gw.post
			gw.p = resize(gw.p, len(base))
			p := gw.p
			for j := range jobs {
				i := free[j]
				var f [2]float64
				for s, sign := range []float64{1, -1} {
					copy(p, base)
					p[i] += sign * h
					if err := m.SetParams(p); err != nil {
						errs <- err
						return
					}
					if err := filter.Filter(post, m, e.times, e.Sites); err != nil {
						errs <- err
						return
					}
					f[s] = post.LogLik
				}
				g[j] = (f[0] - f[1]) / (2 * h)
			}
		}()
	}
	for _, j := range kern {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		return fmt.Errorf("cvi: kernel gradient: %w", err)
	}
	return nil
}

// gradWorker is one kernel-gradient worker's model clone and scratch.
type gradWorker struct {
	src  *filter.Model // the model m was cloned from
	m    *filter.Model
	post filter.Posterior
	p    []float64
}

// stalled ends learning when the line search only probes the noise floor
// of the ELBO around the optimum.
var stalled = optimize.NewStatus("Stalled", true, nil)

// recorder reports progress and counts evaluations since the last major
// iteration.
type recorder struct {
	f       func(int, float64)
	iter    int
	probes  int
	lastF   float64
	improve float64 // relative ELBO gain of the last iteration
}

// innerTol is the CVI tolerance for the next evaluation: while the
// optimiser still gains much per iteration, a CVI fixed point a hundred
// times more precise than that gain is enough; near the optimum it
// tightens to the floor.
func (r *recorder) innerTol(floor float64) float64 {
	return math.Max(floor, math.Min(1e-3, 0.01*r.improve))
}

// Init implements optimize.Recorder.
func (r *recorder) Init() error { return nil }

// Record counts major iterations and reports progress.
func (r *recorder) Record(loc *optimize.Location, op optimize.Operation, _ *optimize.Stats) error {
	if op&optimize.MajorIteration != 0 {
		r.iter++
		r.probes = 0
		if r.iter > 1 {
			r.improve = math.Abs(loc.F-r.lastF) / (1 + math.Abs(loc.F))
		}
		r.lastF = loc.F
		if r.f != nil {
			r.f(r.iter, -loc.F)
		}
	}
	return nil
}
