package cvi

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/internal/errs"
	"gonum.org/v1/gonum/floats"
)

// The batch engine's site update for a city: independent products with
// diagonal sites whose likelihood (the diffusion) couples the products'
// means within a bin.
//
// CVI's diagonal update is a Newton step on the means that keeps only the
// diagonal of the expectation's curvature H; where the diffusion couples
// neighbours this is a Jacobi iteration that overshoots, so that β = 1
// diverges on a city and a halved β needs hundreds of steps. The coupled
// update takes the Newton step on all the window's means at once, with
// H's off-diagonal part N (the Gauss–Newton curvature on the graph's
// pattern, cvi/online_sparse.go) as well: with the prior precision K⁻¹,
// the site precisions D = max(−H_kk, floor) (CVI's own) and the current
// sites λ, the step Δ solves
//
//	(K⁻¹ + D − N)·Δ = g + λ₂m − λ₁   (the ELBO's gradient in the means),
//
// by conjugate gradients preconditioned with M = K⁻¹ + D, whose inverse is
// one Kalman smoother pass over the window (the products' chains are
// independent under M). The new sites keep λ₂ = D and take
// λ₁ = g + D·m + N·Δ, which puts the posterior mean at m + Δ. With N = 0
// this is exactly CVI's update, and the step vanishes exactly where CVI's
// target equals the site: the fixed points, and so the converged sites,
// ELBO and smoothed marginals, are those of the diagonal update; only the
// path differs. N only shapes the step, so it is taken from the coarse
// rule (LearnPoints) of the expectation; the gradient and the diagonal,
// which decide the fixed point, are the full rule's.

// coupledMinProducts is the number of products above which the batch
// engine takes the coupled update (as the online refinement keeps the
// curvature sparse above sparseMinProducts): smaller models, the paper's
// among them, keep CVI's diagonal update and its numbers.
const coupledMinProducts = sparseMinProducts

// coupledWorker is one goroutine's likelihood for the coupled curvature
// (the expectation's scratch and the pattern's values).
type coupledWorker struct {
	lik sparseCoupledExpecter
	g   []float64 // the coarse rule's gradient, unused
}

// coupledState is the coupled update's working memory, kept between
// steps: the workers for the likelihood's current parameters (SetParams
// drops them), the off-diagonal curvature per bin on the shared pattern,
// the smoother's sites and posterior for M⁻¹, and the conjugate
// gradients' vectors over the window's cells.
type coupledState struct {
	workers              []*coupledWorker
	rowPtr               []int       // the pattern (lower triangle, CSR), every bin's
	col                  []int       //
	nval                 [][]float64 // per bin: the curvature on the pattern; nil: none
	dg                   []float64   // per cell: D' = max(D, −H_kk of the Gauss–Newton matrix)
	sites                *filter.Sites
	post                 filter.Posterior
	base                 []float64 // M⁻¹ of the zero right side: the prior mean's part
	b, x, r, z, p, q, ap []float64
	// solver applies M⁻¹ in O(d²) per cell (filter.MeanSolver); smoother:
	// the model is one it does not serve, and M⁻¹ takes smoother passes.
	solver   filter.MeanSolver
	smoother bool
	// cgMet: the last solve reached coupledTol (stepTest needs it).
	cgMet bool
	// Converge's per-cell damping (reverseDamp): the last step proposed
	// per cell and the factor its site updates are damped by.
	prevX, damp []float64
}

// The coupled route's stopping test. Converge stops there when, at the
// current state, the coupled step it would take (the Newton step Δ on the
// window's means, its conjugate gradients having reached coupledTol)
// moves no observed cell's mean by more than coupledStopMean of its
// posterior standard deviation, moves them by at most coupledStopRMS in
// root mean square over the observed cells, and no site precision's
// target differs from the site by more than coupledStopVar of the cell's
// posterior precision (|λ₂* − λ₂|·v: to first order the relative change
// of that cell's variance the update would make). These are the ELBO's
// stationarity conditions in q (its gradient in the means zero, λ₂ equal
// to the expectation's curvature), met to that precision; the step is the
// distance to the fixed point only to first order, and the iteration
// contracts linearly, so the state is further from it than the step
// (TestCoupledStopNearReference measures how far).
//
// The numbers: the expectation's quasi-Monte Carlo rule and its switch to
// exact one-dimensional terms make it piecewise smooth, so the step never
// vanishes. Traced on the ResmoothCity benchmark with the test off (and
// before reverseDamp), once β had been halved to 1/8 and less the largest
// step over the window's cells stayed at 0.033–0.066 sd at City2000
// (336,000 cells, steps 45–70) and 0.015–0.024 sd at City500 (to 500
// steps), the rms at 0.0012–0.0015 sd, the largest |λ₂* − λ₂|·v at
// 0.018–0.05; the online refinement itself stops at 0.05 sd
// (OnlineOptions.MeanTol: its rule puts the fixed point up to ~0.05 sd
// from the exact expectation's). A threshold at that floor stops by
// chance, as the ELBO test did: the thresholds are two to four times it.
// The rms decides the ELBO: at 0.005 sd the ELBO was within 1.7e-6 nats
// per observed cell of a 60-step run at 150 stations × 36 bins
// (TestCoupledStopNearReference) and 2.3e-6 of a 150-step run at 500 ×
// 48 (with an earlier form of reverseDamp; the largest step alone stopped
// there at 11 steps and 1.1e-5).
const (
	coupledStopMean = 0.1
	coupledStopRMS  = 0.005
	coupledStopVar  = 0.1
)

// coupledMinDamp bounds reverseDamp's per-cell damping from below.
const coupledMinDamp = 1.0 / 16

// stepTest is the stopping test's measure of one coupled step: the
// largest and the rms |Δ|/sd and the largest |λ₂* − λ₂|·v over the
// observed cells, and whether the conjugate gradients reached their
// tolerance.
type stepTest struct {
	mean, vars, rms float64
	cg              bool
}

// met reports whether the step passes the stopping test.
func (t stepTest) met() bool {
	return t.cg && t.mean <= coupledStopMean && t.rms <= coupledStopRMS && t.vars <= coupledStopVar
}

// coupledUpdateOK reports whether the engine's model and likelihood take
// the coupled update.
func (e *Engine) coupledUpdateOK() bool {
	if e.DiagonalUpdate || e.lik.Joint() || e.data.NP <= coupledMinProducts {
		return false
	}
	if _, ok := e.lik.(Parallel); !ok {
		return false
	}
	_, ok := e.lik.(sparseCoupledExpecter)
	return ok
}

// switchCoupled turns the coupled update on for the rest of a Converge
// call, where the model takes it and it is not on yet, and reports
// whether it did.
func (e *Engine) switchCoupled() bool {
	if e.coupledOn || !e.coupledUpdateOK() {
		return false
	}
	e.coupledOn = true
	return true
}

// coupled returns the update's state, made on first use.
func (e *Engine) coupled() *coupledState {
	cs := e.cstate
	if cs == nil {
		cs = &coupledState{}
		e.cstate = cs
		n := len(e.bins) * e.data.NP
		for _, v := range []*[]float64{&cs.dg, &cs.base, &cs.b, &cs.x, &cs.r, &cs.z, &cs.p, &cs.q, &cs.ap, &cs.prevX, &cs.damp} {
			*v = make([]float64, n)
		}
		for c := range cs.damp {
			cs.damp[c] = 1
		}
		cs.nval = make([][]float64, len(e.bins))
		cs.sites = filter.NewSites(len(e.bins), e.data.NP, false)
	}
	if cs.workers == nil {
		nw := max(1, min(runtime.GOMAXPROCS(0), len(e.bins)))
		cs.workers = make([]*coupledWorker, nw)
		for i := range cs.workers {
			lik, _ := e.lik.(Parallel).Worker().(sparseCoupledExpecter)
			cs.workers[i] = &coupledWorker{lik: lik, g: make([]float64, e.data.NP)}
		}
	}
	return cs
}

// updateCoupled is update for the coupled route; ok is false when the
// system could not be solved (the caller then takes CVI's diagonal
// update), with the sites unchanged. In Converge (inConverge) it first
// applies the stopping test to the step and, where it is met, returns
// converged with the sites, the posterior and the expectations unchanged;
// otherwise it damps the cells whose step reversed (reverseDamp).
func (e *Engine) updateCoupled(beta float64, inConverge bool) (change float64, ok, converged bool, err error) {
	cs := e.coupled()
	if err := e.coupledCurvature(cs); err != nil {
		return 0, false, false, err
	}
	np, floor := e.data.NP, e.CurvatureFloor
	for i, n := range e.bins {
		obs := e.data.Bin(n)
		l1, l2 := e.sites.Bin(i)
		for k := 0; k < np; k++ {
			c := i*np + k
			cs.b[c], cs.dg[c] = 0, 0
			if math.IsNaN(obs[k].Y) {
				continue
			}
			t2 := math.Max(-e.curv[c], floor)
			cs.b[c] = e.grad[c] + l2[k]*e.post.Mean[c] - l1[k]
			cs.dg[c] = t2
			if nv := cs.nval[i]; nv != nil {
				// A larger diagonal only shortens the step; it keeps
				// the system definite where the exact and the
				// Gauss–Newton diagonals differ.
				cs.dg[c] = math.Max(t2, -nv[cs.rowPtr[k+1]-1])
			}
		}
	}
	if solved, err := e.coupledSolve(cs); err != nil || !solved {
		return 0, false, false, err
	}
	if inConverge {
		e.lastTest = e.coupledStepTest(cs)
		if e.lastTest.met() && !e.stopTestOff {
			return 0, true, true, nil
		}
	}
	// λ₁ = g + D·m + N·Δ − (D' − D)·Δ: the mean at m + Δ under λ₂ = D.
	e.coupledMulN(cs, cs.ap, cs.x)
	for i, n := range e.bins {
		obs := e.data.Bin(n)
		l1, l2 := e.sites.Bin(i)
		for k := 0; k < np; k++ {
			c := i*np + k
			var t1, t2 float64
			if !math.IsNaN(obs[k].Y) {
				t2 = math.Max(-e.curv[c], floor)
				t1 = e.grad[c] + t2*e.post.Mean[c] + cs.ap[c] - (cs.dg[c]-t2)*cs.x[c]
			}
			b := beta
			if inConverge {
				b *= cs.reverseDamp(c, math.Sqrt(e.post.Var[c]))
			}
			n1 := (1-b)*l1[k] + b*t1
			n2 := (1-b)*l2[k] + b*t2
			change = math.Max(change, math.Max(relChange(l1[k], n1), relChange(l2[k], n2)))
			l1[k], l2[k] = n1, n2
		}
	}
	e.coupledSteps++
	e.fresh, e.evaluated = false, false
	return change, true, false, nil
}

// coupledStepTest measures the step cs.x just solved for at the current
// posterior (the stopping test, above).
func (e *Engine) coupledStepTest(cs *coupledState) stepTest {
	np, floor := e.data.NP, e.CurvatureFloor
	t := stepTest{cg: cs.cgMet}
	nc := 0
	for i, n := range e.bins {
		obs := e.data.Bin(n)
		_, l2 := e.sites.Bin(i)
		for k := 0; k < np; k++ {
			c := i*np + k
			if math.IsNaN(obs[k].Y) {
				continue
			}
			v := e.post.Var[c]
			t.mean = math.Max(t.mean, math.Abs(cs.x[c])/math.Sqrt(v))
			t.rms += cs.x[c] * cs.x[c] / v
			nc++
			t.vars = math.Max(t.vars, math.Abs(math.Max(-e.curv[c], floor)-l2[k])*v)
		}
	}
	t.rms = math.Sqrt(t.rms / float64(max(nc, 1)))
	return t
}

// reverseDamp returns the factor cell c's site update is damped by in
// Converge, after recording its step: halved (down to coupledMinDamp)
// each time the step reverses direction without halving in size while it
// is at least half of coupledStopMean (sd: the cell's posterior standard
// deviation), and doubled back (up to 1) each time it keeps its
// direction. At β = 1 a cell where the expectation is not smooth can
// cycle between two states, its step reversing at the same size (0.16 sd
// at one cell of City2000 for 14 steps, while the ELBO still rose
// elsewhere and so never halved β); damping that cell alone ends the
// cycle without slowing the others. Smaller steps are left alone: they do
// not hold the test up, and damping every reversing cell (most of them
// reverse at the noise floor) halved the rate at which the rms fell; a
// cell damped for good after an early overshoot converged at half speed
// and held the test up. A site moved by a fraction of its step leaves the
// fixed points unchanged.
func (cs *coupledState) reverseDamp(c int, sd float64) float64 {
	x, p := cs.x[c], cs.prevX[c]
	switch {
	case x*p < 0 && 2*math.Abs(x) > math.Abs(p) && 2*math.Abs(x) >= coupledStopMean*sd:
		cs.damp[c] = math.Max(cs.damp[c]/2, coupledMinDamp)
	case x*p > 0:
		cs.damp[c] = math.Min(2*cs.damp[c], 1)
	}
	cs.prevX[c] = x
	return cs.damp[c]
}

// resetDamping clears reverseDamp's record at the start of a Converge.
func (e *Engine) resetDamping() {
	if cs := e.cstate; cs != nil {
		clear(cs.prevX)
		for c := range cs.damp {
			cs.damp[c] = 1
		}
	}
}

// coupledCurvature fills cs.nval with every bin's Gauss–Newton curvature
// at the current posterior (coarse rule), the bins in blocks on all
// cores; a bin whose curvature is not available or not finite gets none
// (its products are then coupled through the prior only).
func (e *Engine) coupledCurvature(cs *coupledState) error {
	np := e.data.NP
	const block = 4
	nblk := (len(e.bins) + block - 1) / block
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	cs.rowPtr, cs.col = nil, nil // the transition's pattern, as of now
	for _, w := range cs.workers {
		wg.Add(1)
		go func(w *coupledWorker) {
			defer wg.Done()
			for {
				b := int(next.Add(1)) - 1
				if b >= nblk {
					return
				}
				for i := b * block; i < min((b+1)*block, len(e.bins)); i++ {
					obs := e.data.Bin(e.bins[i])
					mean, vars := e.post.Mean[i*np:(i+1)*np], e.post.Var[i*np:(i+1)*np]
					_, hs, ok := w.lik.expectCoupledSparse(obs, mean, vars, w.g, true)
					if !ok || hs == nil || !finite(hs.val) {
						cs.nval[i] = nil
						continue
					}
					mu.Lock()
					if cs.rowPtr == nil {
						cs.rowPtr, cs.col = hs.rowPtr, hs.col
					}
					mu.Unlock()
					if len(hs.val) != len(cs.col) {
						cs.nval[i] = nil
						continue
					}
					if cs.nval[i] == nil {
						cs.nval[i] = make([]float64, len(hs.val))
					}
					copy(cs.nval[i], hs.val)
				}
			}
		}(w)
	}
	wg.Wait()
	return nil
}

// coupledMulN writes y = N·x: per bin, the off-diagonal curvature between
// observed products.
func (e *Engine) coupledMulN(cs *coupledState, y, x []float64) {
	np := e.data.NP
	clear(y)
	for i, n := range e.bins {
		nv := cs.nval[i]
		if nv == nil {
			continue
		}
		obs := e.data.Bin(n)
		xi, yi := x[i*np:(i+1)*np], y[i*np:(i+1)*np]
		for a := 0; a < np; a++ {
			if math.IsNaN(obs[a].Y) {
				continue
			}
			var s float64
			for q := cs.rowPtr[a]; q < cs.rowPtr[a+1]-1; q++ {
				b := cs.col[q]
				if math.IsNaN(obs[b].Y) {
					continue
				}
				s += nv[q] * xi[b]
				yi[b] += nv[q] * xi[a]
			}
			yi[a] += s
		}
	}
}

// coupledPrecond writes z = M⁻¹·r with M = K⁻¹ + diag(D'): the posterior
// mean of the smoother with sites (r, D') less that of (0, D') (the
// prior mean's part, cs.base).
func (e *Engine) coupledPrecond(cs *coupledState, z, r []float64) error {
	if !cs.smoother {
		cs.solver.Solve(z, r)
		return nil
	}
	copy(cs.sites.Nat1, r)
	if err := filter.SmoothMarginals(&cs.post, e.model, e.times, cs.sites); err != nil {
		return errs.Within("cvi", err, "coupled step's smoother")
	}
	for c, v := range cs.post.Mean {
		z[c] = v - cs.base[c]
	}
	return nil
}

// coupledMaxIter and coupledTol bound the conjugate gradients of one
// coupled step: an inexact Newton step, stopped when the residual's
// M⁻¹-norm fell by coupledTol. Measured on the ResmoothCity benchmark
// (CVI steps to Converge's test): 500 stations, 0.5: 44, 0.3: 34, 0.1: 37,
// 0.03: 37; 2,000 stations, 0.3: 47, 0.1: 23. The steps the ELBO test
// counts vary with where the noise floor stops it; 0.1 is the best
// measured at the city size.
const (
	coupledMaxIter = 10
	coupledTol     = 1e-1
)

// coupledSolve solves (M − N)·x = b by conjugate gradients preconditioned
// with M. M·p is never formed: p is a combination of preconditioned
// residuals z = M⁻¹r, so q = M·p follows as r + β·q. It reports false
// when the system met a direction of non-positive curvature or did not
// give a finite step.
func (e *Engine) coupledSolve(cs *coupledState) (bool, error) {
	err := cs.solver.Prepare(e.model, e.times, cs.dg)
	cs.smoother = errors.Is(err, filter.ErrMeanSolverModel)
	if err != nil && !cs.smoother {
		return false, errs.Within("cvi", err, "coupled step's filter")
	}
	if cs.smoother {
		copy(cs.sites.Nat2, cs.dg)
		clear(cs.sites.Nat1)
		if err := filter.SmoothMarginals(&cs.post, e.model, e.times, cs.sites); err != nil {
			return false, errs.Within("cvi", err, "coupled step's smoother")
		}
		copy(cs.base, cs.post.Mean)
	}
	clear(cs.x)
	copy(cs.r, cs.b)
	if err := e.coupledPrecond(cs, cs.z, cs.r); err != nil {
		return false, err
	}
	copy(cs.p, cs.z)
	copy(cs.q, cs.r)
	rz := floats.Dot(cs.r, cs.z)
	cs.cgMet = rz == 0
	if rz == 0 {
		return true, nil
	}
	stop := coupledTol * coupledTol * rz
	for it := 0; it < coupledMaxIter; it++ {
		e.coupledMulN(cs, cs.ap, cs.p)
		for c := range cs.ap {
			cs.ap[c] = cs.q[c] - cs.ap[c]
		}
		pap := floats.Dot(cs.p, cs.ap)
		if !(pap > 0) {
			return false, nil
		}
		alpha := rz / pap
		for c := range cs.x {
			cs.x[c] += alpha * cs.p[c]
			cs.r[c] -= alpha * cs.ap[c]
		}
		if err := e.coupledPrecond(cs, cs.z, cs.r); err != nil {
			return false, err
		}
		rzNew := floats.Dot(cs.r, cs.z)
		if math.IsNaN(rzNew) {
			return false, nil
		}
		if rzNew <= stop {
			cs.cgMet = true
			break
		}
		beta := rzNew / rz
		rz = rzNew
		for c := range cs.p {
			cs.p[c] = cs.z[c] + beta*cs.p[c]
			cs.q[c] = cs.r[c] + beta*cs.q[c]
		}
	}
	return finite(cs.x), nil
}
