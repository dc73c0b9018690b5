package filter

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// Online is a Kalman filter driven one bin at a time, as the daemon runs
// it: Advance to the next bin's time, Update with that bin's site, read the
// filtered marginal, Forecast ahead. It computes exactly the same
// recursions as Filter, so a batch run over the same bins and sites gives
// the same moments and log marginal likelihood.
//
// An Online is not safe for concurrent use; Clone it (or Save/Restore its
// State) to hand a copy to another goroutine. It caches the transition of
// its last step, so a change of the model's hyperparameters needs a new
// Online.
type Online struct {
	model   *Model
	full    bool
	started bool
	t       float64
	logLik  float64
	// Independent chains (one per product) or one coupled chain.
	m, P   [][]float64
	nm, nP [][]float64       // scratch for the next moments
	fm, fP [][]float64       // scratch for multi-step forecasts
	kerns  []kernel.Temporal // kernel of each chain's copies
	copies int               // copies of the kernel in each chain
	work   []denseWork
	obs    obsWork
	a, q   [][]float64
	lastDt float64 // the step a, q and the work's blocks are for (NaN: none)
	// Scalar chains: H·A and H·Q·Hᵀ of each chain for lastDt, for
	// forecasts of the marginal alone.
	ha  [][]float64
	hqh []float64
	// Scalar chains: the non-zeros of each chain's H (in-chain indices).
	hj     [][]int
	hv     [][]float64
	mu, pu []float64
	cov    []float64    // MarginalVar's and ForecastVar's scratch (coupled chains)
	fc     forecastRows // ForecastStepsVar's rows (scalar chains)
	// split: the per-chain passes' second goroutine and the updates'
	// per-chain results (online_split.go); args, a pass's arguments.
	split   *chainSplit
	args    chainArgs
	splitOn bool
	opts    OnlineOptions
}

// OnlineOptions configures an Online beyond its model. The zero value
// takes diagonal sites and the default split size.
type OnlineOptions struct {
	// FullSites selects whether Update takes full N_p×N_p site precisions
	// (coupling products, one joint chain) or diagonal ones (one chain per
	// product when the product kernel is Independent); a model's start
	// must have the same layout.
	FullSites bool
	// SplitMin is the number of scalar chains from which the per-chain
	// passes (Advance, Update, MarginalVar, ForecastStepsVar, SaveTo) run
	// on two goroutines (0: 256, >= 0): below it the work (about 0.3 µs a
	// chain of dimension 10) is too small to pay for the hand-over. Each
	// chain's numbers are computed as the serial loop computes them and
	// everything summed over the chains is summed after, in chain order,
	// so the results are the same bit for bit whichever goroutine
	// computed a chain.
	SplitMin int
	// Workers bounds the goroutines a split pass runs on, the caller's
	// included (0: runtime.GOMAXPROCS(0) when the pass starts; 1: every
	// pass in one loop on the caller's goroutine). The results do not
	// depend on it (see SplitMin).
	Workers int
}

// defaultSplitMin is OnlineOptions.SplitMin's default.
const defaultSplitMin = 256

// NewOnline returns a filter at the prior of model m, before any bin, or,
// for a model with a start (WithStart), at the start state at its time t0:
// the first Advance must then go past t0.
func NewOnline(m *Model, opts OnlineOptions) (*Online, error) {
	if m == nil {
		return nil, errors.New("filter: nil model")
	}
	switch {
	case opts.SplitMin < 0:
		return nil, fmt.Errorf("filter: online split size must be >= 0, got %d", opts.SplitMin)
	case opts.SplitMin == 0:
		opts.SplitMin = defaultSplitMin
	case opts.Workers < 0:
		return nil, fmt.Errorf("filter: online workers must be >= 0, got %d", opts.Workers)
	}
	o := &Online{model: m, full: opts.FullSites, opts: opts}
	if st := m.start; st != nil {
		if err := st.check(o.scalar(), m.np, nil); err != nil {
			return nil, err
		}
	}
	o.reset()
	return o, nil
}

// scalar reports whether every product is its own chain.
func (o *Online) scalar() bool { return o.model.indep && !o.full }

// reset puts the filter back at the prior, before any bin, or at the
// model's start.
func (o *Online) reset() {
	if o.scalar() {
		o.kerns, o.copies = make([]kernel.Temporal, o.model.np), 1
		for k := range o.kerns {
			o.kerns[k] = o.model.kernelOf(k)
		}
	} else {
		kern, copies := o.model.joint()
		o.kerns, o.copies = []kernel.Temporal{kern}, copies
	}
	nc := len(o.kerns)
	o.m, o.P = make([][]float64, nc), make([][]float64, nc)
	o.nm, o.nP = make([][]float64, nc), make([][]float64, nc)
	o.a, o.q = make([][]float64, nc), make([][]float64, nc)
	o.work = make([]denseWork, nc)
	// Every chain's moments in one array per role, in chain order: the
	// passes over thousands of chains then read memory in sequence.
	var lm, lp int // the means' and the covariances' total length
	for _, kern := range o.kerns {
		D := o.copies * kern.Dim()
		lm, lp = lm+D, lp+D*D
	}
	mb, pb := make([]float64, 2*lm), make([]float64, 2*lp)
	for c, kern := range o.kerns {
		d := kern.Dim()
		D := o.copies * d
		pinf := make([]float64, d*d)
		kern.Stationary(pinf)
		o.m[c], o.nm[c], mb = mb[:D:D], mb[lm:lm+D:lm+D], mb[D:]
		o.P[c], o.nP[c], pb = pb[:D*D:D*D], pb[lp:lp+D*D:lp+D*D], pb[D*D:]
		o.a[c], o.q[c] = make([]float64, d*d), make([]float64, d*d)
		for b := 0; b < o.copies; b++ {
			for r := 0; r < d; r++ {
				copy(o.P[c][(b*d+r)*D+b*d:(b*d+r)*D+b*d+d], pinf[r*d:(r+1)*d])
			}
		}
		rmax := 1
		if !o.scalar() {
			rmax = o.model.np
		}
		o.work[c].grow(o.copies, d, rmax)
	}
	if o.scalar() {
		// Scalar chains read only each product's measurement row: the
		// whitening scratch of a coupled update (N_p × state) is not built.
		o.obs.rows = scalarRows(o.model, o.obs.rows)
	} else {
		o.obs.grow(o.model)
		o.mu, o.pu = linalg.Resize(o.mu, o.model.np), linalg.Resize(o.pu, o.model.np*o.model.np)
	}
	if o.scalar() {
		o.ha, o.hqh = make([][]float64, nc), make([]float64, nc)
		o.hj, o.hv = make([][]int, nc), make([][]float64, nc)
		for c, kern := range o.kerns {
			o.ha[c] = make([]float64, kern.Dim())
			for a, h := range o.obs.rows[c].h {
				if h != 0 {
					o.hj[c], o.hv[c] = append(o.hj[c], a), append(o.hv[c], h)
				}
			}
		}
	}
	o.splitOn = o.hj != nil && nc >= o.opts.SplitMin
	o.lastDt = math.NaN()
	o.started, o.t, o.logLik = false, 0, 0
	if st := o.model.start; st != nil {
		for c := range o.m {
			m0, p0 := st.chain(c)
			copy(o.m[c], m0)
			copy(o.P[c], p0)
		}
		o.started, o.t = true, st.t0
	}
}

// transition makes A(dt), Q(dt), their blocks and, for scalar chains,
// H·A and H·Q·Hᵀ current. They are kept for the last step: the daemon
// advances and forecasts by one bin width over and over.
func (o *Online) transition(dt float64) {
	if sameStep(dt, o.lastDt) {
		o.lastDt = dt
		return
	}
	o.lastDt = dt
	for c, kern := range o.kerns {
		w := &o.work[c]
		d := kern.Dim()
		a, q := o.a[c], o.q[c]
		kern.Transition(a, dt)
		kernel.ProcessNoise(kern, q, dt, w.kscratch)
		w.tb.set(a, q, d, o.copies, false)
		if o.ha == nil {
			continue
		}
		h, ha := o.obs.rows[c].h, o.ha[c]
		clear(ha)
		var hqh float64
		for i, hi := range h {
			if hi == 0 {
				continue
			}
			for j := 0; j < d; j++ {
				ha[j] += hi * a[i*d+j]
				hqh += hi * h[j] * q[i*d+j]
			}
		}
		o.hqh[c] = hqh
	}
}

// propagate writes the moments of every chain dt after the current bin
// into nm, nP.
func (o *Online) propagate(dt float64) {
	o.transition(dt)
	o.forEachChain(passAdvance)
}

// Time returns the time of the current bin; ok is false before the first.
func (o *Online) Time() (t float64, ok bool) { return o.t, o.started }

// LogLik returns the log marginal likelihood of all sites so far.
func (o *Online) LogLik() float64 { return o.logLik }

// Advance predicts the state to time t, which must be later than the
// current bin (the first call only sets the time: the state is then the
// stationary prior).
func (o *Online) Advance(t float64) error {
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return fmt.Errorf("filter: advance to non-finite time %v", t)
	}
	if !o.started {
		o.started, o.t = true, t
		return nil
	}
	if !(t > o.t) {
		return fmt.Errorf("filter: advance to %v, not after the current bin %v", t, o.t)
	}
	o.propagate(t - o.t)
	for c := range o.m {
		o.m[c], o.nm[c] = o.nm[c], o.m[c]
		o.P[c], o.nP[c] = o.nP[c], o.P[c]
	}
	o.t = t
	return nil
}

// Update conditions the current bin on a site (natural parameters over the
// N_p products: nat1 of length N_p, nat2 the diagonal or, with full sites,
// the N_p×N_p block). It returns the bin's log-likelihood contribution.
// On error the state is unchanged.
func (o *Online) Update(nat1, nat2 []float64) (float64, error) {
	np := o.model.np
	if !o.started {
		return 0, errors.New("filter: update before the first Advance")
	}
	s := &Sites{N: 1, NP: np, Full: o.full, Nat1: nat1, Nat2: nat2}
	if err := s.Validate(); err != nil {
		return 0, err
	}
	var total float64
	if o.scalar() {
		l, err := o.updateScalarChains(nat1, nat2)
		if err != nil {
			return 0, err
		}
		total = l
	} else {
		var siteDet, innovDet logProd
		r, err := o.obs.whiten(o.model, nat1, nat2, o.full, &siteDet)
		if err != nil {
			return 0, err
		}
		l, err := updateDense(o.nm[0], o.nP[0], o.m[0], o.P[0], o.obs.cw, o.obs.cs, o.obs.z, o.obs.sup, r, &o.work[0], &innovDet)
		if err != nil {
			return 0, err
		}
		total = l + siteDet.log() - innovDet.log()
		if !linalg.Finite(o.nm[0]) || !linalg.Finite(o.nP[0]) {
			return 0, errNonFinite
		}
	}
	for c := range o.m {
		o.m[c], o.nm[c] = o.nm[c], o.m[c]
		o.P[c], o.nP[c] = o.nP[c], o.P[c]
	}
	o.logLik += total
	return total, nil
}

// Marginal writes the filtered mean (length N_p) and joint covariance
// (N_p×N_p, or nil) of the latent demand at the current bin.
func (o *Online) Marginal(mean, cov []float64) {
	o.marginal(o.m, o.P, mean, cov)
}

// Forecast writes the predictive mean and covariance of f at a time t
// later than the current bin without changing the filter state.
func (o *Online) Forecast(t float64, mean, cov []float64) error {
	if !o.started {
		return errors.New("filter: forecast before the first bin")
	}
	if !(t >= o.t) || math.IsInf(t, 0) {
		return fmt.Errorf("filter: forecast at %v, before the current bin %v", t, o.t)
	}
	if o.ha != nil {
		o.forecastScalar(t-o.t, mean, cov)
		return nil
	}
	o.propagate(t - o.t)
	o.marginal(o.nm, o.nP, mean, cov)
	return nil
}

// forecastScalar is Forecast for scalar chains: the marginal of f = H·x
// after dt is (H·A)·m and (H·A)·P·(H·A)ᵀ + H·Q·Hᵀ, without the
// propagated state covariance.
func (o *Online) forecastScalar(dt float64, mean, cov []float64) {
	np := o.model.np
	o.transition(dt)
	if cov != nil {
		clear(cov[:np*np])
	}
	for c, m := range o.m {
		ha, P := o.ha[c], o.P[c]
		d := len(ha)
		var mu, v float64
		for i, hi := range ha {
			mu += hi * m[i]
			row := P[i*d : (i+1)*d]
			var s float64
			for j, hj := range ha {
				s += row[j] * hj
			}
			v += hi * s
		}
		mean[c] = mu
		if cov != nil {
			cov[c*np+c] = v + o.hqh[c]
		}
	}
}

// ForecastSteps writes the predictive mean and covariance of f at 1, 2,
// …, n steps of dt after the current bin into mean and cov and calls fn
// after each, without changing the filter state. It propagates step by
// step with one transition, where n calls of Forecast would each build
// their own. fn must not call the filter.
func (o *Online) ForecastSteps(dt float64, n int, mean, cov []float64, fn func(h int)) error {
	if !o.started {
		return errors.New("filter: forecast before the first bin")
	}
	if !(dt > 0) || math.IsInf(dt, 0) {
		return fmt.Errorf("filter: forecast step %v is not positive and finite", dt)
	}
	o.propagate(dt)
	if len(o.fm) != len(o.m) {
		o.fm, o.fP = make([][]float64, len(o.m)), make([][]float64, len(o.m))
		for c := range o.m {
			o.fm[c], o.fP[c] = make([]float64, len(o.m[c])), make([]float64, len(o.P[c]))
		}
	}
	for h := 1; h <= n; h++ {
		if h > 1 {
			for c := range o.kerns {
				w := &o.work[c]
				predictDense(o.fm[c], o.fP[c], o.nm[c], o.nP[c], &w.tb, w)
				o.fm[c], o.nm[c] = o.nm[c], o.fm[c]
				o.fP[c], o.nP[c] = o.nP[c], o.fP[c]
			}
		}
		o.marginal(o.nm, o.nP, mean, cov)
		fn(h)
	}
	return nil
}

func (o *Online) marginal(m, P [][]float64, mean, cov []float64) {
	np := o.model.np
	if len(m) > 1 || (o.model.indep && !o.full) {
		if cov != nil {
			for i := range cov[:np*np] {
				cov[i] = 0
			}
		}
		for c := range m {
			var mu, v float64
			if o.hj != nil {
				mu, v = scalarMarginalSparse(m[c], P[c], o.hj[c], o.hv[c])
			} else {
				mu, v = scalarMarginal(m[c], P[c], o.obs.rows[c].h)
			}
			mean[c] = mu
			if cov != nil {
				cov[c*np+c] = v
			}
		}
		return
	}
	latentMarginal(m[0], P[0], o.obs.rows, o.mu, o.pu)
	if cov == nil {
		cov = make([]float64, np*np)
	}
	loadMarginal(o.model.b, np, o.mu, o.pu, mean, cov)
}

// State is a copy of an Online filter's state, for snapshots and for
// handing a filter to another goroutine.
type State struct {
	Started bool
	Time    float64
	LogLik  float64
	// Mean and Cov hold one state mean and covariance (row-major) per chain.
	Mean, Cov [][]float64
}

// Save returns a deep copy of the filter's state.
func (o *Online) Save() State {
	var s State
	o.SaveTo(&s)
	return s
}

// SaveTo copies the filter's state into s, reusing its slices.
func (o *Online) SaveTo(s *State) {
	s.Started, s.Time, s.LogLik = o.started, o.t, o.logLik
	if len(s.Mean) != len(o.m) {
		s.Mean, s.Cov = make([][]float64, len(o.m)), make([][]float64, len(o.m))
	}
	if o.hj == nil {
		for c := range o.m {
			s.Mean[c] = append(s.Mean[c][:0], o.m[c]...)
			s.Cov[c] = append(s.Cov[c][:0], o.P[c]...)
		}
		return
	}
	o.args = chainArgs{state: s}
	o.forEachChain(passSave)
	o.args = chainArgs{}
}

// Restore replaces the filter's state by s, which must come from a filter
// of the same model shape. On error the state is unchanged.
func (o *Online) Restore(s State) error {
	nc := len(o.m)
	if len(s.Mean) != nc || len(s.Cov) != nc {
		return fmt.Errorf("filter: state has %d chains, want %d", len(s.Mean), nc)
	}
	for c := 0; c < nc; c++ {
		D := len(o.m[c])
		if len(s.Mean[c]) != D || len(s.Cov[c]) != D*D {
			return fmt.Errorf("filter: state chain %d has dimension %d, want %d", c, len(s.Mean[c]), D)
		}
		if !linalg.Finite(s.Mean[c]) || !linalg.Finite(s.Cov[c]) {
			return fmt.Errorf("filter: state chain %d is not finite", c)
		}
	}
	if math.IsNaN(s.Time) || math.IsInf(s.Time, 0) {
		return fmt.Errorf("filter: state time not finite: %v", s.Time)
	}
	for c := 0; c < nc; c++ {
		copy(o.m[c], s.Mean[c])
		copy(o.P[c], s.Cov[c])
		// The update reads one triangle: a saved covariance that is not
		// exactly symmetric (e.g. rounded by a serialiser) is averaged.
		linalg.Symmetrize(o.P[c], len(o.m[c]))
	}
	o.started, o.t, o.logLik = s.Started, s.Time, s.LogLik
	return nil
}

// Clone returns an independent copy of the filter sharing the model.
func (o *Online) Clone() *Online {
	c := &Online{model: o.model, full: o.full, opts: o.opts}
	c.reset()
	_ = c.Restore(o.Save())
	return c
}
