package filter

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"github.com/dcgpd/dcgpd/internal/errs"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// Posterior holds the result of running the Kalman filter (and, unless
// only filtering was asked for, the RTS smoother) of a Model over a time
// grid with Sites. Its buffers are reused by later runs into the same
// Posterior, so a zero Posterior is ready to use and repeated fits
// allocate nothing once sized.
//
// The Posterior refers to the Model it was computed with: changing the
// model's hyperparameters invalidates Predict until the next run.
type Posterior struct {
	// Times are the bins' times (the caller's slice; not copied).
	Times []float64
	// NP is the number of products.
	NP int
	// Mean and Var hold the marginal mean and variance of the latent f per
	// bin and product (index n·NP + k): smoothed, or filtered if Smoothed
	// is false.
	Mean, Var []float64
	// Cov holds the joint covariance of f over the products per bin
	// (NP×NP blocks, index (n·NP + i)·NP + j) when the products are
	// coupled; it is nil when every product is its own chain (then the
	// joint covariance is diag(Var)).
	Cov []float64
	// LogLik is log Z̃, the log marginal likelihood of the sites, from the
	// filter's prediction-error decomposition.
	LogLik float64
	// Smoothed reports whether Mean/Var/Cov are smoothed.
	Smoothed bool
	// Workers caps the goroutines a run may use for the chains of an
	// Independent model with diagonal sites (one chain per product): 0
	// means runtime.GOMAXPROCS(0); 1 keeps runs serial, for callers that
	// already run several filters at once. The results do not depend on
	// it, bit for bit.
	Workers int
	// MinParallelWork is the least work, bins × Σ_k d_k² over the
	// products' chains (twice that with the smoother), for which such a
	// run starts goroutines, and twice the least each worker gets (0:
	// 2¹⁷; 1 lets every run go parallel, however small).
	MinParallelWork int

	marginalOnly bool // Mean/Var/Cov smoothed without the smoothed states
	chainMBF     *mbfStore
	mbf          mbfStore
	mbfw         mbfWork

	model        *Model
	indep        bool
	chains       []chain
	chainScratch               // serial runs' scratch, and parallel worker 0's
	workers      []chainWorker // parallel workers 1, 2, …
	chainLLs     []float64     // a parallel run's log marginal likelihood per product
	chainErrs    []error       // and error per product
	mu, pu       []float64     // latent-space marginals of one bin
	// rec, when set, keeps each independent chain's gains after its
	// filter pass (MeanSolver.Prepare).
	rec *MeanSolver
}

// Smooth runs the Kalman filter and RTS smoother of model m over the
// strictly increasing times with sites s (s.N = len(times), s.NP =
// m.NumProducts()), writing the smoothed posterior into dst.
func Smooth(dst *Posterior, m *Model, times []float64, s *Sites) error {
	return dst.run(m, times, s, runSmooth)
}

// Filter runs only the Kalman filter, writing filtered marginals and the
// log marginal likelihood into dst. It costs about a third of Smooth.
func Filter(dst *Posterior, m *Model, times []float64, s *Sites) error {
	return dst.run(m, times, s, runFilter)
}

// SmoothMarginals computes what Smooth computes for the latent demand —
// smoothed means, variances, joint covariances per bin and the log
// marginal likelihood — without the smoothed states, by a modified
// Bryson–Frazier backward pass whose cost per bin is O(N_p·D²) instead of
// the RTS smoother's O(D³) for a coupled state of dimension D. It is what
// CVI needs at every step; the result cannot Predict (use Smooth).
func SmoothMarginals(dst *Posterior, m *Model, times []float64, s *Sites) error {
	return dst.run(m, times, s, runMarginals)
}

// FilterLogLik is Filter for callers that need only the log marginal
// likelihood and the filtered marginals (Mean, Var, Cov), e.g. the
// gradient of log Z̃ by finite differences: with one chain per product it
// keeps the per-bin storage of one chain per worker (see
// Posterior.Workers) instead of every product's, so its memory is
// O(W·N·d²) for W workers rather than O(N_p·N·d²). The result cannot
// Predict (use Filter). Its numbers are Filter's, bit for bit.
func FilterLogLik(dst *Posterior, m *Model, times []float64, s *Sites) error {
	return dst.run(m, times, s, runFilterMarginals)
}

// runMode selects what a run computes.
type runMode int

const (
	runFilter runMode = iota
	runSmooth
	runMarginals
	runFilterMarginals
)

// run checks the input, sizes the posterior and runs the filter (and
// smoother) on the independent chains or on the coupled chain.
func (p *Posterior) run(m *Model, times []float64, s *Sites, mode runMode) error {
	smooth := mode == runSmooth || mode == runMarginals
	if m == nil || s == nil {
		return fmt.Errorf("filter: nil model or sites")
	}
	if err := checkTimes(times); err != nil {
		return err
	}
	if s.N != len(times) || s.NP != m.np {
		return fmt.Errorf("filter: sites are %d bins × %d products, want %d × %d", s.N, s.NP, len(times), m.np)
	}
	if err := s.Validate(); err != nil {
		return err
	}
	n, np := len(times), m.np
	p.Times, p.NP, p.model, p.Smoothed = times, np, m, smooth
	p.marginalOnly = false
	p.Mean = linalg.Resize(p.Mean, n*np)
	p.Var = linalg.Resize(p.Var, n*np)
	p.LogLik = 0
	p.indep = m.indep && !s.Full
	p.growObs(m)
	if m.start != nil {
		if err := m.start.check(p.indep, np, times); err != nil {
			return err
		}
	}
	if n == 0 {
		return nil
	}
	if p.indep {
		return p.runIndependent(m, times, s, smooth, mode == runMarginals || mode == runFilterMarginals)
	}
	err := p.runCoupled(m, times, s, smooth, mode == runMarginals)
	if mode == runFilterMarginals {
		p.marginalOnly = true // as documented, whichever storage it kept
	}
	return err
}

// growObs sizes the observation scratch. Independent chains read only
// each product's measurement row and one scalar site's whitening (as the
// parallel workers' growScalar): the coupled update's whitening scratch,
// N_p × N_p·d numbers twice over (864 MB at 2,000 products and d = 12),
// is built only for the coupled chain.
func (p *Posterior) growObs(m *Model) {
	if !p.indep {
		p.obsWork.grow(m)
		return
	}
	p.rows = scalarRows(m, p.rows)
	dmax := 0
	for k := range p.rows {
		dmax = max(dmax, len(p.rows[k].h))
	}
	p.h = p.rows[0].h
	p.growScalar(dmax)
}

// runIndependent runs one chain per product (an Independent model with
// diagonal sites), on several goroutines when the run is large enough
// (see chainWorkers). With shared, the chains keep only the marginals and
// each worker runs its products' chains one after the other in the same
// storage: memory for one chain's bins per worker (at most Workers or
// GOMAXPROCS of them), not N_p chains'; the result cannot Predict.
func (p *Posterior) runIndependent(m *Model, times []float64, s *Sites, smooth, shared bool) error {
	np := m.np
	p.Cov = nil
	nw := p.chainWorkers(m, len(times), smooth)
	nc := np
	if shared {
		nc = nw
		p.marginalOnly = true
	}
	if cap(p.chains) < nc {
		// Keep the chains already sized.
		p.chains = append(p.chains[:cap(p.chains)], make([]chain, nc-cap(p.chains))...)
	}
	p.chains = p.chains[:nc]
	if nw > 1 {
		return p.runParallel(m, times, s, smooth, shared, nw)
	}
	for k := 0; k < np; k++ {
		ll, err := p.runProduct(&p.chains[min(k, nc-1)], &p.chainScratch, m, m.kernelOf(k), times, s, k, smooth)
		if err != nil {
			return errs.Withinf("filter", err, "product %d", k)
		}
		p.LogLik += ll
	}
	return nil
}

// runProduct runs product k's chain c with kernel kern (the model's, or a
// worker's copy of it) and scratch sc, and writes its marginals into Mean
// and Var. It returns the chain's log marginal likelihood.
func (p *Posterior) runProduct(c *chain, sc *chainScratch, m *Model, kern kernel.Temporal, times []float64, s *Sites, k int, smooth bool) (float64, error) {
	n, np := len(times), p.NP
	d := kern.Dim()
	sc.work.grow(1, d, 1)
	sc.h = p.rows[k].h
	c.grow(n, d, d, smooth, true)
	ll, err := p.runChain(c, sc, m, kern, times, s, k, smooth)
	if err != nil {
		return ll, err
	}
	if p.rec != nil {
		if err := p.rec.record(k, c, sc, d); err != nil {
			return ll, err
		}
	}
	if !sc.twoState(c) {
		for i := 0; i < n; i++ {
			p.Mean[i*np+k], p.Var[i*np+k] = p.chainMarginal(c, sc, i)
		}
	}
	return ll, nil
}

// runCoupled runs the coupled chain over all products, and its marginals
// per bin by the RTS smoother's states or, with mbf, the Bryson–Frazier
// pass.
func (p *Posterior) runCoupled(m *Model, times []float64, s *Sites, smooth, mbf bool) error {
	n, np := len(times), m.np
	p.Cov = linalg.Resize(p.Cov, n*np*np)
	if cap(p.chains) < 1 {
		p.chains = make([]chain, 1)
	}
	p.chains = p.chains[:1]
	c := &p.chains[0]
	kern, copies := m.joint()
	d := kern.Dim()
	D := copies * d
	c.grow(n, D, d, smooth && !mbf, smooth && !mbf)
	p.work.grow(copies, d, np)
	if mbf {
		p.mbf.grow(n, np, D)
		p.chainMBF = &p.mbf
	} else {
		p.chainMBF = nil
	}
	p.mu, p.pu = linalg.Resize(p.mu, np), linalg.Resize(p.pu, np*np)
	ll, err := p.runChain(c, &p.chainScratch, m, kern, times, s, -1, smooth && !mbf)
	if err != nil {
		return err
	}
	p.LogLik = ll
	if mbf {
		p.marginalsMBF(c, &p.mbf, copies, d, np)
		p.marginalOnly = true
		return nil
	}
	for i := 0; i < n; i++ {
		p.jointMarginal(c, i, p.Mean[i*np:(i+1)*np], p.Cov[i*np*np:(i+1)*np*np])
		for k := 0; k < np; k++ {
			p.Var[i*np+k] = p.Cov[(i*np+k)*np+k]
		}
	}
	return nil
}

// runChain filters (and smooths) one chain; k >= 0 selects product k's
// scalar sites, k < 0 the coupled chain over all products. It returns the
// log marginal likelihood of the sites. sc is the scratch it works in:
// the Posterior's own, or a parallel worker's for k >= 0.
func (p *Posterior) runChain(c *chain, sc *chainScratch, m *Model, kern kernel.Temporal, times []float64, s *Sites, k int, smooth bool) (float64, error) {
	if k >= 0 && sc.twoState(c) {
		return runTwoState(c, kern, times, s.Nat1, s.Nat2, p.Mean, p.Var, k, s.NP, smooth, m.start)
	}
	chainPrior(c, &sc.work, m, kern, times[0], k)
	ll, err := p.filterChain(c, sc, m, kern, times, s, k)
	if err != nil || !smooth {
		return ll, err
	}
	return ll, smoothChain(c, &sc.work, kern.Dim(), len(times))
}

// chainPrior writes the prior at the first bin, t0, into the chain's
// first predicted moments: the stationary Pinf on every latent copy, or
// the model's start predicted to t0; and the identity as the transition
// into bin 0. w is the scratch.
func chainPrior(c *chain, w *denseWork, m *Model, kern kernel.Temporal, t0 float64, k int) {
	d := kern.Dim()
	D, dd := c.dim, d*d
	ms, ps := c.mp[:D], c.pp[:D*D]
	if st := m.start; st != nil {
		predictStart(ms, ps, c.a[:dd], st, max(k, 0), kern, t0-st.t0, w)
	} else {
		for i := range ms {
			ms[i] = 0
		}
		for i := range ps {
			ps[i] = 0
		}
		pinf := w.q
		kern.Stationary(pinf)
		for b := 0; b < D/d; b++ {
			for r := 0; r < d; r++ {
				copy(ps[(b*d+r)*D+b*d:(b*d+r)*D+b*d+d], pinf[r*d:(r+1)*d])
			}
		}
	}
	linalg.SetIdentity(c.a[:dd], d)
	c.aFrom[0] = 0
}

// filterChain is the forward pass over the chain's bins from its prior:
// predict, whiten the bin's sites (scalar sites of product k >= 0, or
// the bin's block for k < 0), update. It returns the log marginal
// likelihood, and for the Bryson–Frazier pass records what it needs. It
// works in sc's scratch (the Posterior's own for k < 0).
func (p *Posterior) filterChain(c *chain, sc *chainScratch, m *Model, kern kernel.Temporal, times []float64, s *Sites, k int) (float64, error) {
	w := &sc.work
	d := kern.Dim()
	D, dd := c.dim, d*d
	var ll float64
	// Π|L_Λ| and Π|L_S| over the bins (see whiten and updateDense), and the
	// step A and Q were last computed for.
	var siteDet, innovDet logProd
	stepDt := math.NaN()
	for n := range times {
		mp, pp := c.pred(n)
		if n > 0 {
			dt := times[n] - times[n-1]
			if sameStep(dt, stepDt) {
				c.aFrom[n] = c.aFrom[n-1]
			} else {
				c.aFrom[n] = n
				an := c.a[n*dd : (n+1)*dd]
				kern.Transition(an, dt)
				kernel.ProcessNoise(kern, w.q, dt, w.kscratch)
				w.tb.set(an, w.q, d, D/d, false)
				stepDt = dt
			}
			predictDense(mp, pp, c.mf[(n-1)*D:n*D], c.pf[(n-1)*D*D:n*D*D], &w.tb, w)
		}
		var r int
		if k >= 0 {
			r = sc.scalarObs(s.Nat1[n*s.NP+k], s.Nat2[n*s.NP+k], &siteDet)
		} else {
			var err error
			l1, l2 := s.Bin(n)
			if r, err = sc.whiten(m, l1, l2, s.Full, &siteDet); err != nil {
				return 0, errs.Withinf("filter", err, "bin %d", n)
			}
		}
		// The backward pass keeps U = L⁻¹·Cw·pp, which updateDense then
		// leaves in its store directly.
		rec := k < 0 && p.chainMBF != nil
		ut := w.ut
		if rec {
			w.ut = p.chainMBF.slot(n, p.NP, D)
		}
		l, err := updateDense(c.mf[n*D:(n+1)*D], c.pf[n*D*D:(n+1)*D*D], mp, pp, sc.cw, sc.cs, sc.z, sc.sup, r, w, &innovDet)
		w.ut = ut
		if err != nil {
			return 0, errs.Withinf("filter", err, "bin %d", n)
		}
		if rec {
			p.chainMBF.record(n, r, p.NP, D, sc.cw, sc.cs, sc.sup, w)
			p.fRows(p.chainMBF.slot(n, p.NP, D)[r*D:(r+p.NP)*D], c.pf[n*D*D:(n+1)*D*D])
		}
		ll += l
	}
	ll += siteDet.log() - innovDet.log()
	return ll, nil
}

// smoothChain is the RTS backward pass over the chain's N bins (d is the
// temporal state dimension) in the scratch w.
func smoothChain(c *chain, w *denseWork, d, N int) error {
	D, dd := c.dim, d*d
	copy(c.ms[(N-1)*D:], c.mf[(N-1)*D:N*D])
	copy(c.ps[(N-1)*D*D:], c.pf[(N-1)*D*D:N*D*D])
	for n := N - 2; n >= 0; n-- {
		err := smoothDense(c.ms[n*D:(n+1)*D], c.ps[n*D*D:(n+1)*D*D], c.mf[n*D:(n+1)*D], c.pf[n*D*D:(n+1)*D*D],
			c.ms[(n+1)*D:(n+2)*D], c.ps[(n+1)*D*D:(n+2)*D*D], c.mp[(n+1)*D:(n+2)*D], c.pp[(n+1)*D*D:(n+2)*D*D],
			c.transition(n+1, dd), w)
		if err != nil {
			return errs.Withinf("filter", err, "bin %d", n)
		}
	}
	return nil
}

// sameStep reports whether a step dt may reuse the transition and process
// noise computed for the step prev: a regular grid's steps differ only by
// the rounding of the times, and recomputing A and Q for each costs more
// than the rest of a small chain's step. The relative tolerance 1e-12
// changes A and Q by far less than any result is accurate to.
func sameStep(dt, prev float64) bool {
	return dt == prev || math.Abs(dt-prev) <= 1e-12*dt
}

// chainMarginal returns the mean and variance of H·x (H = sc.h) of a
// scalar chain.
func (p *Posterior) chainMarginal(c *chain, sc *chainScratch, n int) (mean, v float64) {
	ms, ps := c.state(n, p.Smoothed)
	return scalarMarginal(ms, ps, sc.h)
}

// jointMarginal writes the mean and joint covariance of f = B·(I⊗H)·x at
// bin n of the coupled chain.
func (p *Posterior) jointMarginal(c *chain, n int, mean, cov []float64) {
	np := p.NP
	x, P := c.state(n, p.Smoothed)
	if p.unitF() {
		// Each product is one state component.
		D := len(x)
		for k, i := range p.sel {
			mean[k] = x[i]
			for l, j := range p.sel[:k+1] {
				v := P[i*D+j]
				cov[k*np+l], cov[l*np+k] = v, v
			}
		}
		return
	}
	if p.model.indep {
		// B = I: the latents are the products.
		latentMarginal(x, P, p.rows, mean, cov)
		return
	}
	latentMarginal(x, P, p.rows, p.mu, p.pu)
	loadMarginal(p.model.b, np, p.mu, p.pu, mean, cov)
}

// latentMarginal writes μ_k = H_k x_k and P_u[k,l] = H_k P_kl H_lᵀ for
// the products' measurement rows in a joint state x (dimension D).
func latentMarginal(x, P []float64, rows []hrow, mu, pu []float64) {
	np := len(rows)
	D := len(x)
	for i := range rows {
		ri := &rows[i]
		var s float64
		for a, j := range ri.hj {
			s += ri.hv[a] * x[j]
		}
		mu[i] = s
		for j := 0; j <= i; j++ {
			rj := &rows[j]
			var v float64
			for a, ja := range ri.hj {
				ha, row := ri.hv[a], P[ja*D:]
				for b, jb := range rj.hj {
					v += ha * rj.hv[b] * row[jb]
				}
			}
			pu[i*np+j], pu[j*np+i] = v, v
		}
	}
}

// loadMarginal writes mean = B μ and cov = B P_u Bᵀ for lower-triangular B.
func loadMarginal(b []float64, np int, mu, pu, mean, cov []float64) {
	for i := 0; i < np; i++ {
		var s float64
		for j := 0; j <= i; j++ {
			s += b[i*np+j] * mu[j]
		}
		mean[i] = s
	}
	for i := 0; i < np; i++ {
		for j := 0; j <= i; j++ {
			var v float64
			for a := 0; a <= i; a++ {
				if b[i*np+a] == 0 {
					continue
				}
				for c := 0; c <= j; c++ {
					v += b[i*np+a] * pu[a*np+c] * b[j*np+c]
				}
			}
			cov[i*np+j], cov[j*np+i] = v, v
		}
	}
}

// twoState reports whether a scalar chain measured by H = o.h takes the
// unrolled two-state route (twostate.go).
func (o *obsWork) twoState(c *chain) bool {
	return c.dim == 2 && o.h[0] == 1 && o.h[1] == 0
}
