package cvi

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// OnlineOptions configures the per-bin CVI refinement of an Online.
type OnlineOptions struct {
	// Steps bounds the local CVI steps per bin (default 20). The
	// refinement is a first pass: the background re-smooth revisits every
	// bin of its window with full CVI sweeps.
	Steps int
	// Damping is the first step's β in (0, 1] (default 1); a step that
	// clearly lowers the bin's local ELBO, E_q[log p(y|f)] −
	// KL(q‖prediction), is undone and β halved, as in Engine.Converge.
	Damping float64
	// Tol stops the refinement when the bin's local ELBO changes by less
	// than Tol·(1 + |ELBO|) from one step to the next (default 1e-6: the re-smooth refines
	// every bin of its window later).
	Tol float64
	// CurvatureFloor is the smallest site precision an observed product
	// gets (default 1e-8, as the batch engine's).
	CurvatureFloor float64
	// MeanTol also stops the refinement once a step moved every product's
	// refined mean by less than β·MeanTol of its standard deviation and its
	// variance by less than β·MeanTol relatively, β the step's damping: the
	// undamped step was below MeanTol (default 0.05: the diffusion
	// likelihood's 64-point quasi-Monte Carlo rule puts its fixed point up
	// to ~0.05 sd from the exact expectation's, and the re-smooth refines
	// every bin later). The step is kept without another expectation. 0
	// disables it. Above 64 independent products with diagonal sites,
	// once at most 2% of them moved by MeanTol or more, the next steps
	// move those alone and hold the others' sites (localised steps, see
	// localFrac).
	MeanTol float64
	// WholeBinSteps turns the localised steps off: every step moves the
	// whole bin (the reference the tests compare the localised steps with).
	WholeBinSteps bool
	// Workers bounds the goroutines a bin's independent work runs on, the
	// caller's included: the filter's per-chain passes and the parts of
	// the likelihood's points (0: runtime.GOMAXPROCS(0) when the work
	// starts; 1: all of it on the caller's goroutine). The results are the
	// same bit for bit whatever it is; each goroutine ends with its pass.
	Workers int
}

// DefaultOnlineOptions returns the documented defaults.
func DefaultOnlineOptions() OnlineOptions {
	return OnlineOptions{Steps: 20, Damping: 1, Tol: 1e-6, CurvatureFloor: 1e-8, MeanTol: 0.05}
}

// Validate checks the options' ranges.
func (o OnlineOptions) Validate() error {
	switch {
	case o.Steps < 1:
		return fmt.Errorf("cvi: online steps must be >= 1, got %d", o.Steps)
	case !(o.Damping > 0 && o.Damping <= 1):
		return fmt.Errorf("cvi: online damping must be in (0, 1], got %v", o.Damping)
	case !(o.Tol > 0) || math.IsInf(o.Tol, 0):
		return fmt.Errorf("cvi: online tolerance must be finite and > 0, got %v", o.Tol)
	case !(o.CurvatureFloor > 0) || math.IsInf(o.CurvatureFloor, 0):
		return fmt.Errorf("cvi: online curvature floor must be finite and > 0, got %v", o.CurvatureFloor)
	case !(o.MeanTol >= 0) || math.IsInf(o.MeanTol, 0):
		return fmt.Errorf("cvi: online mean tolerance must be finite and >= 0, got %v", o.MeanTol)
	case o.Workers < 0:
		return fmt.Errorf("cvi: online workers must be >= 0, got %d", o.Workers)
	}
	return nil
}

// BinResult is what one online step produced for its bin.
type BinResult struct {
	// Time of the bin.
	Time float64
	// Mean and Var are the filtered marginal of the latent demand per
	// product; PredMean and PredVar the one-step prediction before the
	// bin's data.
	Mean, Var         []float64
	PredMean, PredVar []float64
	// Nat1 and Nat2 are the site the refinement settled on (Nat2 N_p×N_p
	// for a joint likelihood, else N_p): a batch filter over these sites
	// reproduces the filtered moments.
	Nat1, Nat2 []float64
	// Steps is the number of CVI steps taken; Converged reports whether
	// the site met the tolerance within them.
	Steps     int
	Converged bool
	// LogLik is the bin's log marginal likelihood of its site.
	LogLik float64
}

// ErrOnlineNumerics reports that a bin's refinement or update produced
// non-finite numbers; the filter state is unchanged.
var ErrOnlineNumerics = errors.New("cvi: online step is not finite")

// Online is the daemon's per-bin inference: Kalman prediction to the bin,
// a local CVI refinement of the bin's site against the predicted marginal
// (the joint expectation over the bin's products for a joint likelihood),
// and the filter update with that site. Its cost per bin does not depend on
// how many bins came before.
//
// An Online is not safe for concurrent use.
type Online struct {
	model *filter.Model
	lik   Likelihood
	filt  *filter.Online
	opts  OnlineOptions
	np    int
	joint bool
	// indep: products are independent chains with diagonal sites, so the
	// predicted and refined covariances are diagonal.
	indep bool
	// scratch
	pm, pc       []float64 // predicted mean, covariance (N_p, N_p²; nil for independent products)
	pv           []float64 // predicted variances
	qm, qc, qv   []float64 // refined mean, covariance, variances
	g, h         []float64 // expectation gradient and curvature
	l1, l2       []float64 // current site
	t2, psdWork  []float64
	lw, plw, mwk []float64 // square root of Λ, P·L, Cholesky of M
	r            []float64
	kl           float64 // KL(q‖prediction) of the last refined marginal
	p1, p2       []float64
	mq, vq       []float64 // the evaluated marginal, to measure a step by
	// Newton steps on the means of independent products: the coupled
	// curvature, when the likelihood has one, and the system's scratch.
	coupled coupledExpecter
	hf      []float64 // N_p×N_p curvature of the last expectation (haveHF)
	// sparse: the curvature is kept on the diffusion graph's pattern and
	// the Newton system solved by conjugate gradients (more than
	// sparseMinProducts products): no N_p×N_p array.
	sparse  bool
	scoup   sparseCoupledExpecter
	hs      *symSparse // the last expectation's curvature (haveHF, sparse)
	newton  sparseNewton
	obsMask []bool
	dg      []float64
	haveHF  bool
	coarse  bool // the last expectation took the likelihood's coarse rule
	// Localised steps (OnlineOptions.WholeBinSteps off): active marks the stations the last
	// step moved by MeanTol or more; with at most localMax of them the
	// next steps move those alone (lexp restricts the expectation).
	lexp       localExpecter
	active     []bool
	moved      []bool
	localMax   int
	localSteps int
	idx        []int
	nA, nL, nb []float64
	t2v        []float64
	// warm: l1, l2 hold the last refined bin's site, over prevObserved.
	warm         bool
	prevObserved []bool
	saved        filter.State // the state before the bin in progress
}

// NewOnline returns the online inference of model m with likelihood lik,
// at the prior before any bin.
func NewOnline(m *filter.Model, lik Likelihood, opts OnlineOptions) (*Online, error) {
	if m == nil || lik == nil {
		return nil, errors.New("cvi: nil model or likelihood")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	f, err := filter.NewOnline(m, filter.OnlineOptions{FullSites: lik.Joint(), Workers: opts.Workers})
	if err != nil {
		return nil, err
	}
	if w, ok := lik.(parallelLikelihood); ok {
		w.setWorkers(opts.Workers)
	}
	np := m.NumProducts()
	o := &Online{model: m, lik: lik, filt: f, opts: opts, np: np, joint: lik.Joint()}
	o.indep = m.Independent() && !o.joint
	w := np
	if o.joint {
		w = np * np
	}
	o.pm, o.pv = make([]float64, np), make([]float64, np)
	o.qm, o.qv = make([]float64, np), make([]float64, np)
	o.g, o.h = make([]float64, np), make([]float64, w)
	o.l1, o.l2 = make([]float64, np), make([]float64, w)
	o.p1, o.p2 = make([]float64, np), make([]float64, w)
	o.r = make([]float64, np)
	o.mq, o.vq = make([]float64, np), make([]float64, np)
	if !o.indep {
		o.growJoint()
	}
	o.prevObserved = make([]bool, np)
	o.setCoupling(np > sparseMinProducts)
	return o, nil
}

// growJoint allocates the scratch of the refinement of coupled products,
// which works on the joint marginal.
func (o *Online) growJoint() {
	np := o.np
	o.pc, o.qc = make([]float64, np*np), make([]float64, np*np)
	o.t2, o.psdWork = make([]float64, np*np), make([]float64, max(np*np, 3*np))
	o.lw, o.plw, o.mwk = make([]float64, np*np), make([]float64, np*np), make([]float64, np*np)
}

// parallelLikelihood is a likelihood whose expectation shares its work
// among goroutines (see OnlineOptions.Workers).
type parallelLikelihood interface {
	setWorkers(n int)
}

// sparseMinProducts is the number of independent products above which the
// online refinement keeps the diffusion's curvature sparse: below it the
// dense Cholesky solve of the Newton system is as cheap.
const sparseMinProducts = 64

// localFrac is the share of products still moving below which the
// refinement's steps are localised. On BenchmarkOnlineBin/City2000 the
// stations a step moves by 0.05 sd or more fall from about 1,950 after the
// coarse first step to about 250 and 15 after the next two: with 2% (40)
// the steps from the fourth on are mostly localised. Above a few per cent the moving
// stations' terms and their neighbours' excess cover most of the city and
// a localised step costs nearly a whole one.
const localFrac = 0.02

// localExpecter is a likelihood whose sparse coupled expectation can be
// restricted to what some products' means reach: the gradient of those
// products and the curvature among them are exact, every other entry and
// E are not (see Diffusion.setLocal).
type localExpecter interface {
	setLocal(active []bool)
}

// sparseCoupledExpecter is a likelihood whose expectation with diagonal
// sites also gives the Gauss–Newton curvature in the means on a sparse
// pattern (see Diffusion.expectCoupledSparse).
type sparseCoupledExpecter interface {
	expectCoupledSparse(obs []Obs, mean, vars, grad []float64, coarse bool) (float64, *symSparse, bool)
}

// setCoupling chooses how the Newton step on independent products gets
// the likelihood's coupling: sparse (curvature on the graph's pattern,
// conjugate gradients) or dense (N_p×N_p curvature, Cholesky).
func (o *Online) setCoupling(sparse bool) {
	np := o.np
	o.coupled, o.scoup, o.sparse = nil, nil, false
	o.lexp, o.active, o.moved = nil, nil, nil
	o.hf, o.nA, o.nL = nil, nil, nil
	if !o.indep {
		return
	}
	o.idx, o.nb, o.t2v = make([]int, np), make([]float64, np), make([]float64, np)
	o.obsMask, o.dg = make([]bool, np), make([]float64, np)
	if c, ok := o.lik.(sparseCoupledExpecter); ok && sparse {
		o.scoup, o.sparse = c, true
		if l, ok := o.lik.(localExpecter); ok && !o.opts.WholeBinSteps {
			o.lexp, o.active, o.moved = l, make([]bool, np), make([]bool, np)
			o.localMax = int(localFrac * float64(np))
		}
		return
	}
	if c, ok := o.lik.(coupledExpecter); ok {
		o.coupled = c
		o.hf = make([]float64, np*np)
		o.nA, o.nL = make([]float64, np*np), make([]float64, np*np)
	}
}

// predicted reads the filter's predicted marginal into pm, pv (and pc
// for coupled products) and dst's prediction.
func (o *Online) predicted(dst *BinResult) {
	if o.indep {
		o.filt.MarginalVar(o.pm, o.pv)
	} else {
		o.filt.Marginal(o.pm, o.pc)
		for k := 0; k < o.np; k++ {
			o.pv[k] = o.pc[k*o.np+k]
		}
	}
	o.grow(dst)
	copy(dst.PredMean, o.pm)
	copy(dst.PredVar, o.pv)
}

// filtered reads the filter's updated marginal into qm, qv and dst.
func (o *Online) filtered(dst *BinResult) {
	if o.indep {
		o.filt.MarginalVar(o.qm, o.qv)
	} else {
		o.filt.Marginal(o.qm, o.qc)
		for k := 0; k < o.np; k++ {
			o.qv[k] = o.qc[k*o.np+k]
		}
	}
	copy(dst.Mean, o.qm)
	copy(dst.Var, o.qv)
}

// Filter returns the underlying Kalman filter (for Save, Restore and
// Forecast).
func (o *Online) Filter() *filter.Online { return o.filt }

// Step processes the bin at time t with the N_p observations obs (NaN Y:
// missing) and writes its result into dst, reusing dst's slices. t must
// be later than the previous bin. On error the filter state is unchanged.
func (o *Online) Step(t float64, obs []Obs, dst *BinResult) error {
	if len(obs) != o.np {
		return fmt.Errorf("cvi: online bin has %d observations, want %d", len(obs), o.np)
	}
	o.filt.SaveTo(&o.saved)
	if err := o.filt.Advance(t); err != nil {
		return err
	}
	if err := o.step(t, obs, dst); err != nil {
		// Put the filter back where it was before the bin.
		_ = o.filt.Restore(o.saved)
		o.warm = false
		return err
	}
	return nil
}

// Skip advances the filter to the bin at time t that has no observation
// at all and writes the prediction there into dst.
func (o *Online) Skip(t float64, dst *BinResult) error {
	saved := o.filt.Save()
	if err := o.filt.Advance(t); err != nil {
		return err
	}
	o.predicted(dst)
	dst.Time, dst.Steps, dst.Converged, dst.LogLik = t, 0, true, 0
	clear(dst.Nat1)
	clear(dst.Nat2)
	copy(dst.Mean, o.pm)
	copy(dst.Var, o.pv)
	if !finite(dst.Mean) || !finite(dst.Var) {
		_ = o.filt.Restore(saved)
		return ErrOnlineNumerics
	}
	return nil
}

// Apply advances to the bin at time t and updates with a given site (from
// an earlier Step or a re-smooth) without refining it, writing the
// filtered marginal into dst.
func (o *Online) Apply(t float64, nat1, nat2 []float64, dst *BinResult) error {
	saved := o.filt.Save()
	if err := o.filt.Advance(t); err != nil {
		return err
	}
	o.predicted(dst)
	copy(dst.Nat1, nat1)
	copy(dst.Nat2, nat2)
	ll, err := o.filt.Update(nat1, nat2)
	if err != nil {
		_ = o.filt.Restore(saved)
		return fmt.Errorf("cvi: online update: %w", err)
	}
	o.filtered(dst)
	dst.Time, dst.LogLik, dst.Steps, dst.Converged = t, ll, 0, true
	if !finite(dst.Mean) || !finite(dst.Var) {
		_ = o.filt.Restore(saved)
		return ErrOnlineNumerics
	}
	return nil
}

func (o *Online) grow(dst *BinResult) {
	np := o.np
	w := len(o.l2)
	dst.Mean, dst.Var = linalg.Resize(dst.Mean, np), linalg.Resize(dst.Var, np)
	dst.PredMean, dst.PredVar = linalg.Resize(dst.PredMean, np), linalg.Resize(dst.PredVar, np)
	dst.Nat1, dst.Nat2 = linalg.Resize(dst.Nat1, np), linalg.Resize(dst.Nat2, w)
}

// step refines the site of the bin the filter was just advanced to
// (refine) and updates the filter with it (commit).
func (o *Online) step(t float64, obs []Obs, dst *BinResult) error {
	o.predicted(dst)
	o.initialSite(obs)
	steps, converged, err := o.refine(t, obs)
	if err != nil {
		return err
	}
	return o.commit(t, obs, steps, converged, dst)
}

// refine runs the batch engine's step rules (evaluate, judge, undo or
// damp, move) on this bin's local ELBO E_q[log p(y|f)] − KL(q‖prediction)
// until they converge or o.opts.Steps run out, leaving the refined site
// in o.l1, o.l2. Its branches share the loop's state, so the loop is kept
// whole to be read against Engine.Converge.
func (o *Online) refine(t float64, obs []Obs) (steps int, converged bool, err error) {
	beta, tol := o.opts.Damping, o.opts.Tol
	prevELBO := math.Inf(-1)
	reeval := false
	fresh := false // q is already refined for the current site
	o.localSteps = 0
	local := false // the next expectations are localised to o.active
	for steps < o.opts.Steps {
		steps++
		if !fresh {
			if err := o.refined(); err != nil {
				return steps, converged, err
			}
		}
		fresh = false
		if local {
			o.lexp.setLocal(o.active)
		}
		// A coarse first step only where full-rule steps can follow it.
		e := o.expect(obs, steps == 1 && o.opts.Steps >= 3)
		if local {
			o.lexp.setLocal(nil)
			o.localSteps++
		}
		if math.IsNaN(e) || math.IsInf(e, 0) || !finite(o.g) || !finite(o.h) || (o.haveHF && !o.curvFinite()) {
			return steps, converged, fmt.Errorf("%w: expected log-likelihood %v at t=%v", ErrOnlineNumerics, e, t)
		}
		elbo := e - o.kl
		v := stepKeep
		if reeval {
			reeval = false
		} else {
			// A localised E holds the terms of the same stations at every
			// localised step, so their ELBOs compare with each other.
			v = judgeStep(elbo, prevELBO, tol, beta, 0)
		}
		switch v {
		case stepUndo:
			copy(o.l1, o.p1)
			copy(o.l2, o.p2)
			beta /= 2
			reeval = true
			continue
		case stepDamp:
			beta /= 2
		case stepConverged:
			converged = true
		}
		if converged || steps == o.opts.Steps {
			break
		}
		prevELBO = elbo
		if o.coarse {
			// Judge the first full-rule state on its own.
			prevELBO = math.Inf(-1)
		}
		copy(o.p1, o.l1)
		copy(o.p2, o.l2)
		if _, err := o.moveSite(obs, beta, local); err != nil {
			return steps, converged, err
		}
		if o.opts.MeanTol > 0 {
			// Refine for the new site now: if it barely moved q, stop here.
			copy(o.mq, o.qm)
			copy(o.vq, o.qv)
			if err := o.refined(); err != nil {
				return steps, converged, err
			}
			fresh = true
			n := o.unsettled(o.opts.MeanTol * beta)
			if n == 0 {
				converged = true
				break
			}
			if !local && !o.coarse && o.lexp != nil && n <= o.localMax {
				// Few stations still move: the next steps on them alone.
				local, prevELBO = true, math.Inf(-1)
				copy(o.active, o.moved)
			}
		}
	}
	return steps, converged, nil
}

// commit updates the filter with the refined site o.l1, o.l2 and writes
// the bin's result into dst.
func (o *Online) commit(t float64, obs []Obs, steps int, converged bool, dst *BinResult) error {
	ll, err := o.filt.Update(o.l1, o.l2)
	if err != nil {
		return fmt.Errorf("cvi: online update: %w", err)
	}
	o.filtered(dst)
	if !finite(dst.Mean) || !finite(dst.Var) {
		return ErrOnlineNumerics
	}
	copy(dst.Nat1, o.l1)
	copy(dst.Nat2, o.l2)
	dst.Time, dst.Steps, dst.Converged, dst.LogLik = t, steps, converged, ll
	o.warm = true
	for k := range obs {
		o.prevObserved[k] = !math.IsNaN(obs[k].Y)
	}
	return nil
}

// initialSite starts the refinement from the previous bin's site where
// the same products are observed (demand is autocorrelated, so it is
// usually a few steps from this bin's fixed point), zero elsewhere.
func (o *Online) initialSite(obs []Obs) {
	np := o.np
	if !o.warm {
		clear(o.l1)
		clear(o.l2)
		return
	}
	for a := 0; a < np; a++ {
		if !math.IsNaN(obs[a].Y) && o.prevObserved[a] {
			continue
		}
		o.l1[a] = 0
		if !o.joint {
			o.l2[a] = 0
			continue
		}
		for b := 0; b < np; b++ {
			o.l2[a*np+b], o.l2[b*np+a] = 0, 0
		}
	}
}

// moveSite moves the current site towards the Newton target of the last
// expectation with damping beta and returns the largest relative change.
func (o *Online) moveSite(obs []Obs, beta float64, local bool) (float64, error) {
	np := o.np
	floor := o.opts.CurvatureFloor
	var change float64
	if o.indep {
		return o.moveIndep(obs, beta, local), nil
	}
	if !o.joint {
		for k := 0; k < np; k++ {
			var t1, t2 float64
			if !math.IsNaN(obs[k].Y) {
				t2 = math.Max(-o.h[k], floor)
				t1 = o.g[k] + t2*o.qm[k]
			}
			n1 := (1-beta)*o.l1[k] + beta*t1
			n2 := (1-beta)*o.l2[k] + beta*t2
			change = math.Max(change, math.Max(relChange(o.l1[k], n1), relChange(o.l2[k], n2)))
			o.l1[k], o.l2[k] = n1, n2
		}
		return change, nil
	}
	if err := psdTarget(o.t2, o.psdWork, o.h, np, floor); err != nil {
		return 0, fmt.Errorf("cvi: online site: %w", err)
	}
	for a := 0; a < np; a++ {
		t1 := o.g[a]
		for b := 0; b < np; b++ {
			t1 += o.t2[a*np+b] * o.qm[b]
		}
		n1 := (1-beta)*o.l1[a] + beta*t1
		change = math.Max(change, relChange(o.l1[a], n1))
		o.l1[a] = n1
		for b := 0; b <= a; b++ {
			n2 := (1-beta)*o.l2[a*np+b] + beta*0.5*(o.t2[a*np+b]+o.t2[b*np+a])
			change = math.Max(change, relChange(o.l2[a*np+b], n2))
			o.l2[a*np+b], o.l2[b*np+a] = n2, n2
		}
	}
	return change, nil
}

// coupledExpecter is a likelihood whose expectation with diagonal sites
// also gives the whole N_p×N_p curvature in the means (see
// Diffusion.expectCoupled).
type coupledExpecter interface {
	expectCoupled(obs []Obs, mean, vars, grad, curv []float64, coarse bool) (float64, bool)
}

// expect evaluates the bin's expected log-likelihood at the refined
// marginal into g and h (and hf where the likelihood couples independent
// products). With first, the coupled likelihood takes its coarse rule
// (o.coarse reports it): the first step from the warm start, typically
// half a standard deviation or more from this bin's fixed point, needs
// the expectation's shape, not its last digits, and every later step,
// the one the refinement stops on included, takes the full rule. (On the
// OnlineBin benchmark, 16 of the 64 points in the first expectation leave
// the number of steps per bin as it was.)
func (o *Online) expect(obs []Obs, first bool) float64 {
	o.haveHF, o.coarse = false, false
	if o.scoup != nil {
		if e, hs, ok := o.scoup.expectCoupledSparse(obs, o.qm, o.qv, o.g, first); ok {
			if hs == nil {
				return math.NaN()
			}
			for k := range o.h {
				o.h[k] = hs.val[hs.diag(k)]
			}
			o.hs, o.haveHF, o.coarse = hs, true, first
			return e
		}
	}
	if o.coupled != nil {
		if e, ok := o.coupled.expectCoupled(obs, o.qm, o.qv, o.g, o.hf, first); ok {
			np := o.np
			for k := range o.h {
				o.h[k] = o.hf[k*np+k]
			}
			o.haveHF, o.coarse = true, first
			return e
		}
	}
	cov := o.qv
	if o.joint {
		cov = o.qc
	}
	return o.lik.Expect(obs, o.qm, cov, o.g, o.h)
}

// unsettled returns the number of products the last step moved by tol
// standard deviations or more in their refined mean, or by tol or more
// relatively in their variance (mq, vq: the marginal before the step),
// and marks them in o.moved where the refinement keeps it.
func (o *Online) unsettled(tol float64) int {
	n := 0
	for k := 0; k < o.np; k++ {
		v := o.vq[k]
		moved := !(v > 0) || !(math.Abs(o.qm[k]-o.mq[k]) < tol*math.Sqrt(v)) || !(math.Abs(o.qv[k]-v) < tol*v)
		if moved {
			n++
		}
		if o.moved != nil {
			o.moved[k] = moved
		}
	}
	return n
}

// moveIndep is moveSite for independent products: a Newton step on the
// refined means. With prediction N(pm_k, p_k), the local ELBO's gradient in
// the means is g − (m − pm)/p and its Hessian H − diag(1/p); CVI's site
// update is the Newton step with H's diagonal only, which converges
// slowly where the diffusion couples products. Here the whole H (when the
// likelihood gives it) sets the new means m + Δ, the site precision stays
// CVI's max(−H_kk, floor) (used on the system's diagonal as well), and λ₁
// is the one that puts the refined mean at m + Δ. With a diagonal H this
// is exactly CVI's update. It returns the largest relative change.
func (o *Online) moveIndep(obs []Obs, beta float64, local bool) float64 {
	if o.sparse || !o.haveHF {
		// Without coupling the system is diagonal: no N_p×N_p array.
		return o.moveSparse(obs, beta, local)
	}
	np, floor := o.np, o.opts.CurvatureFloor
	n := 0
	for k := 0; k < np; k++ {
		if !math.IsNaN(obs[k].Y) {
			o.idx[n] = k
			n++
		}
	}
	idx, A, b := o.idx[:n], o.nA[:n*n], o.nb[:n]
	for i, k := range idx {
		p := o.pv[k]
		t2 := math.Max(-o.h[k], floor)
		o.t2v[k] = t2
		for j, kj := range idx[:i] {
			var v float64
			if o.haveHF {
				v = -o.hf[k*np+kj]
			}
			A[i*n+j], A[j*n+i] = v, v
		}
		A[i*n+i] = 1/p + t2
		b[i] = o.g[k] - (o.qm[k]-o.pm[k])/p
	}
	L := o.nL[:n*n]
	if o.haveHF && linalg.CholeskySym(L, A, n) {
		forwardSolve(L, b, n)
		backSolve(L, b, n)
	} else {
		for i := range b {
			b[i] /= A[i*n+i]
		}
	}
	var change float64
	i := 0
	for k := 0; k < np; k++ {
		var t1, t2 float64
		if i < n && idx[i] == k {
			p := o.pv[k]
			t2 = o.t2v[k]
			t1 = (o.qm[k]+b[i])*(1/p+t2) - o.pm[k]/p
			i++
		}
		n1 := (1-beta)*o.l1[k] + beta*t1
		n2 := (1-beta)*o.l2[k] + beta*t2
		change = math.Max(change, math.Max(relChange(o.l1[k], n1), relChange(o.l2[k], n2)))
		o.l1[k], o.l2[k] = n1, n2
	}
	return change
}

// backSolve overwrites x with L⁻ᵀx for the n×n lower-triangular L.
func backSolve(l, x []float64, n int) {
	for i := n - 1; i >= 0; i-- {
		s := x[i]
		for j := i + 1; j < n; j++ {
			s -= l[j*n+i] * x[j]
		}
		x[i] = s / l[i*n+i]
	}
}

// refined writes the marginal of f at the bin given the prediction and
// the current site, q ∝ N(pm, pc)·t(f), into qm, qc and qv. With Λ = L·Lᵀ
// it uses S = P − P·L·M⁻¹·Lᵀ·P, M = I + Lᵀ·P·L, which needs no inverse of
// the (possibly near-singular) predicted covariance P.
func (o *Online) refined() error {
	if o.indep {
		return o.refinedIndep()
	}
	nl, err := o.siteFactor()
	if err != nil {
		return err
	}
	o.siteResidual()
	copy(o.qc, o.pc)
	if nl > 0 {
		if err := o.subtractSite(nl); err != nil {
			return err
		}
	}
	// δ = m − pm = S·r
	np := o.np
	var dr float64
	for a := 0; a < np; a++ {
		var s float64
		for b := 0; b < np; b++ {
			s += o.qc[a*np+b] * o.r[b]
		}
		o.qm[a] = o.pm[a] + s
		o.qv[a] = o.qc[a*np+a]
		dr += s * o.r[a]
	}
	if !finite(o.qm) || !finite(o.qc) {
		return ErrOnlineNumerics
	}
	o.kl = 0
	if nl > 0 {
		o.kl = o.klTerm(nl, dr)
	}
	return nil
}

// siteFactor writes the columns of a square root L of the site precision
// Λ into lw (stride N_p) and returns their number: √λ·e_k for diagonal
// sites, the Cholesky factor or V·√max(e, 0) for full ones.
func (o *Online) siteFactor() (int, error) {
	np := o.np
	clear(o.lw)
	nl := 0
	if !o.joint {
		for k := 0; k < np; k++ {
			if o.l2[k] > 0 {
				o.lw[k*np+nl] = math.Sqrt(o.l2[k])
				nl++
			}
		}
		return nl, nil
	}
	if !anyNonZero(o.l2) {
		return 0, nil
	}
	if linalg.CholeskySym(o.mwk, o.l2, np) {
		copy(o.lw, o.mwk)
		return np, nil
	}
	vals, vecs, err := eigenScaled(o.l2, np, 1)
	if err != nil {
		return 0, fmt.Errorf("cvi: online site: %w", err)
	}
	for c, v := range vals {
		if v <= 0 {
			continue
		}
		s := math.Sqrt(v)
		for a := 0; a < np; a++ {
			o.lw[a*np+nl] = vecs.At(a, c) * s
		}
		nl++
	}
	return nl, nil
}

// siteResidual writes r = λ₁ − Λ·pm.
func (o *Online) siteResidual() {
	np := o.np
	for a := 0; a < np; a++ {
		r := o.l1[a]
		if o.joint {
			for b := 0; b < np; b++ {
				r -= o.l2[a*np+b] * o.pm[b]
			}
		} else {
			r -= o.l2[a] * o.pm[a]
		}
		o.r[a] = r
	}
}

// subtractSite subtracts P·L·M⁻¹·Lᵀ·P from qc (which holds P), leaving
// the Cholesky factor of M = I + Lᵀ·P·L in t2 and P·L in plw for klTerm.
func (o *Online) subtractSite(nl int) error {
	np := o.np
	P := o.pc
	// PL = P·L (np×nl, stride np)
	for a := 0; a < np; a++ {
		for c := 0; c < nl; c++ {
			var s float64
			for b := 0; b < np; b++ {
				s += P[a*np+b] * o.lw[b*np+c]
			}
			o.plw[a*np+c] = s
		}
	}
	// M = I + Lᵀ·P·L (nl×nl, stride nl), then its Cholesky in place.
	m := o.psdWork[:nl*nl]
	for c := 0; c < nl; c++ {
		for d := 0; d < nl; d++ {
			var s float64
			for b := 0; b < np; b++ {
				s += o.lw[b*np+c] * o.plw[b*np+d]
			}
			if c == d {
				s++
			}
			m[c*nl+d] = s
		}
	}
	lm := o.t2[:nl*nl]
	if !linalg.CholeskySym(lm, m, nl) {
		return fmt.Errorf("%w: site system not positive definite", ErrOnlineNumerics)
	}
	// W = Lm⁻¹·(PL)ᵀ column by column of PLᵀ; S −= Wᵀ·W.
	w := o.mwk[:nl*np]
	for a := 0; a < np; a++ {
		for c := 0; c < nl; c++ {
			s := o.plw[a*np+c]
			for d := 0; d < c; d++ {
				s -= lm[c*nl+d] * w[d*np+a]
			}
			w[c*np+a] = s / lm[c*nl+c]
		}
	}
	for a := 0; a < np; a++ {
		for b := 0; b <= a; b++ {
			var s float64
			for c := 0; c < nl; c++ {
				s += w[c*np+a] * w[c*np+b]
			}
			v := o.qc[a*np+b] - s
			o.qc[a*np+b], o.qc[b*np+a] = v, v
		}
	}
	return nil
}

// refinedIndep is refined for independent products: per product, with
// prediction N(pm, p) and site (λ₁, λ₂), M = 1 + p·λ₂, the refined
// variance is p/M and the mean pm + (p/M)·(λ₁ − λ₂·pm). qc is not written.
func (o *Online) refinedIndep() error {
	np := o.np
	var kl float64
	for k := 0; k < np; k++ {
		p := o.pv[k]
		l2 := o.l2[k]
		r := o.l1[k] - l2*o.pm[k]
		x := p * math.Max(l2, 0) // as refined: a negative precision adds none

		v := p / (1 + x)
		d := v * r
		o.qm[k], o.qv[k] = o.pm[k]+d, v
		// KL(N(m, v)‖N(pm, p)) = ½[log M − x/M + δ²/p], δ²/p = d·r/M.
		kl += math.Log1p(x) - x/(1+x) + d*r/(1+x)
	}
	o.kl = 0.5 * kl
	if !finite(o.qm) || !finite(o.qv) || math.IsNaN(o.kl) {
		return ErrOnlineNumerics
	}
	return nil
}

// klTerm returns KL(q‖p) of the refined marginal from the prediction,
// ½[tr(M⁻¹) − n_L + log|M| + δᵀP⁻¹δ], with the Cholesky factor of M in
// t2 and δᵀr in dr; P⁻¹δ = r − L·M⁻¹·(PL)ᵀ·r needs no inverse of P.
func (o *Online) klTerm(nl int, dr float64) float64 {
	np := o.np
	lm := o.t2[:nl*nl]
	a, b := o.psdWork[:nl], o.psdWork[nl:2*nl]
	for c := 0; c < nl; c++ {
		var sa, sb float64
		for k := 0; k < np; k++ {
			sa += o.lw[k*np+c] * (o.qm[k] - o.pm[k])
			sb += o.plw[k*np+c] * o.r[k]
		}
		a[c], b[c] = sa, sb
	}
	forwardSolve(lm, a, nl)
	forwardSolve(lm, b, nl)
	quad := dr
	var logDet, trace float64
	for c := 0; c < nl; c++ {
		quad -= a[c] * b[c]
		logDet += 2 * math.Log(lm[c*nl+c])
	}
	// tr(M⁻¹) = ‖Lm⁻¹‖²_F, column by column.
	col := o.psdWork[2*nl : 3*nl]
	for c := 0; c < nl; c++ {
		clear(col)
		col[c] = 1
		forwardSolve(lm, col, nl)
		for _, v := range col {
			trace += v * v
		}
	}
	return 0.5 * (trace - float64(nl) + logDet + quad)
}

// forwardSolve overwrites x with L⁻¹x for the n×n lower-triangular L.
func forwardSolve(l, x []float64, n int) {
	for i := 0; i < n; i++ {
		s := x[i]
		for j := 0; j < i; j++ {
			s -= l[i*n+j] * x[j]
		}
		x[i] = s / l[i*n+i]
	}
}

// Forecast writes the predictive mean and variances of f at time t (later
// than the current bin) without changing the state; cov is N_p×N_p
// scratch for coupled products (nil: the filter's own) and not used for
// independent ones, which are forecast per product.
func (o *Online) Forecast(t float64, mean, vars, cov []float64) error {
	if o.indep || cov == nil {
		return o.filt.ForecastVar(t, mean, vars)
	}
	if err := o.filt.Forecast(t, mean, cov); err != nil {
		return err
	}
	for k := 0; k < o.np; k++ {
		vars[k] = cov[k*o.np+k]
	}
	return nil
}

// ForecastSteps writes the predictive mean and variances of f at 1, …, n
// steps of dt after the current bin and calls fn after each (see
// filter.Online.ForecastSteps); cov is as in Forecast.
func (o *Online) ForecastSteps(dt float64, n int, mean, vars, cov []float64, fn func(h int)) error {
	if o.indep || cov == nil {
		return o.filt.ForecastStepsVar(dt, n, mean, vars, fn)
	}
	return o.filt.ForecastSteps(dt, n, mean, cov, func(h int) {
		for k := 0; k < o.np; k++ {
			vars[k] = cov[k*o.np+k]
		}
		fn(h)
	})
}

func anyNonZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}

func finite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// curvFinite reports whether the last expectation's coupled curvature is
// finite.
func (o *Online) curvFinite() bool {
	if o.sparse {
		return finite(o.hs.val)
	}
	return finite(o.hf)
}

// moveSparse is moveIndep with the curvature on the diffusion graph's
// pattern (or none): the same Newton system, A = diag(1/p + t2) − offdiag(H) over
// the observed products, solved by conjugate gradients (falling back to
// the diagonal, as the dense route does when Cholesky fails).
func (o *Online) moveSparse(obs []Obs, beta float64, local bool) float64 {
	floor := o.opts.CurvatureFloor
	b := o.nb
	for k := 0; k < o.np; k++ {
		o.obsMask[k] = !math.IsNaN(obs[k].Y) && (!local || o.active[k])
		b[k], o.dg[k] = 0, 1
		if !o.obsMask[k] {
			continue
		}
		p := o.pv[k]
		t2 := math.Max(-o.h[k], floor)
		o.t2v[k] = t2
		o.dg[k] = 1/p + t2
		b[k] = o.g[k] - (o.qm[k]-o.pm[k])/p
	}
	if !o.haveHF || !o.newton.solve(o.hs, o.dg, b, o.obsMask) {
		for k := range b {
			b[k] /= o.dg[k]
		}
	}
	var change float64
	for k := 0; k < o.np; k++ {
		var t1, t2 float64
		switch {
		case o.obsMask[k]:
			p := o.pv[k]
			t2 = o.t2v[k]
			t1 = (o.qm[k]+b[k])*(1/p+t2) - o.pm[k]/p
		case local:
			// Held: a settled station keeps its site.
			continue
		}
		n1 := (1-beta)*o.l1[k] + beta*t1
		n2 := (1-beta)*o.l2[k] + beta*t2
		change = math.Max(change, math.Max(relChange(o.l1[k], n1), relChange(o.l2[k], n2)))
		o.l1[k], o.l2[k] = n1, n2
	}
	return change
}
