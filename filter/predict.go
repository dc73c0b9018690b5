package filter

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// Predict writes the posterior mean and covariance of the latent demand f
// over all products at an arbitrary time t into mean (length NP) and cov
// (NP×NP, or nil to skip; for independent chains only the diagonal is
// non-zero). Between bins it interpolates, before the first bin it
// conditions the stationary prior (or, for a model with a start at t0, the
// start predicted to t; t < t0 is an error) backwards, after the last bin it
// forecasts; at a bin time it returns that bin's marginal. With a smoothed
// posterior the result conditions on all sites; with a filtered one, on the
// sites up to t.
func (p *Posterior) Predict(t float64, mean, cov []float64) error {
	np := p.NP
	if p.model == nil {
		return errors.New("filter: predict on an empty posterior")
	}
	if p.marginalOnly {
		return errors.New("filter: predict needs the states: run Smooth or Filter, not SmoothMarginals or FilterLogLik")
	}
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return fmt.Errorf("filter: predict at non-finite time %v", t)
	}
	if len(mean) < np || (cov != nil && len(cov) < np*np) {
		return fmt.Errorf("filter: predict destinations too short for %d products", np)
	}
	if st := p.model.start; st != nil && t < st.t0 {
		return fmt.Errorf("filter: predict at %v, before the model's start at %v", t, st.t0)
	}
	if p.indep {
		if cov != nil {
			for i := range cov[:np*np] {
				cov[i] = 0
			}
		}
		pw := &predictWork{}
		for k := range p.chains {
			kern := p.model.kernelOf(k)
			d := kern.Dim()
			pw.grow(d)
			p.work.grow(1, d, 1)
			if err := p.predictChain(&p.chains[k], k, kern, t, pw); err != nil {
				return err
			}
			mu, v := scalarMarginal(pw.ms, pw.ps, p.rows[k].h)
			mean[k] = mu
			if cov != nil {
				cov[k*np+k] = v
			}
		}
		return nil
	}
	kern, copies := p.model.joint()
	pw := &predictWork{}
	pw.grow(copies * kern.Dim())
	p.work.grow(copies, kern.Dim(), np)
	if err := p.predictChain(&p.chains[0], 0, kern, t, pw); err != nil {
		return err
	}
	latentMarginal(pw.ms, pw.ps, p.rows, p.mu, p.pu)
	if cov == nil {
		cov = make([]float64, np*np)
	}
	loadMarginal(p.model.b, np, p.mu, p.pu, mean, cov)
	return nil
}

// predictWork holds the moments of one prediction.
type predictWork struct {
	mf, pf, ms, ps []float64
	a, q           []float64
}

func (w *predictWork) grow(D int) {
	w.mf, w.pf = linalg.Resize(w.mf, D), linalg.Resize(w.pf, D*D)
	w.ms, w.ps = linalg.Resize(w.ms, D), linalg.Resize(w.ps, D*D)
}

// predictChain writes the state moments of chain c (number ci) at time t
// into w.ms, w.ps.
func (p *Posterior) predictChain(c *chain, ci int, kern kernel.Temporal, t float64, w *predictWork) error {
	d := kern.Dim()
	D := c.dim
	dw := &p.work
	w.a, w.q = linalg.Resize(w.a, d*d), linalg.Resize(w.q, d*d)
	times := p.Times
	N := len(times)
	idx := sort.SearchFloat64s(times, t)
	if idx < N && times[idx] == t {
		ms, ps := c.state(idx, p.Smoothed)
		copy(w.ms, ms)
		copy(w.ps, ps)
		return nil
	}
	// "Filtered" moments at t: propagated from the previous bin, or the
	// stationary prior (or the model's start propagated) before the first
	// bin.
	if st := p.model.start; idx == 0 && st != nil {
		predictStart(w.mf, w.pf, w.a, st, ci, kern, t-st.t0, dw)
	} else if idx == 0 {
		for i := range w.mf {
			w.mf[i] = 0
		}
		for i := range w.pf {
			w.pf[i] = 0
		}
		kern.Stationary(w.q)
		for b := 0; b < D/d; b++ {
			for r := 0; r < d; r++ {
				copy(w.pf[(b*d+r)*D+b*d:(b*d+r)*D+b*d+d], w.q[r*d:(r+1)*d])
			}
		}
	} else {
		dt := t - times[idx-1]
		kern.Transition(w.a, dt)
		kernel.ProcessNoise(kern, w.q, dt, dw.kscratch)
		// After the last bin the filtered and smoothed states coincide; in
		// between, the filter state at the previous bin is what the RTS
		// step below corrects.
		mPrev, pPrev := c.mf[(idx-1)*D:idx*D], c.pf[(idx-1)*D*D:idx*D*D]
		dw.tb.set(w.a, w.q, d, D/d, false)
		predictDense(w.mf, w.pf, mPrev, pPrev, &dw.tb, dw)
	}
	if idx == N || !p.Smoothed {
		copy(w.ms, w.mf)
		copy(w.ps, w.pf)
		return nil
	}
	// One RTS step from the next bin. Its predicted moments from t equal
	// the stored ones because A and Q compose over the split interval.
	kern.Transition(w.a, times[idx]-t)
	msN, psN := c.state(idx, true)
	return smoothDense(w.ms, w.ps, w.mf, w.pf, msN, psN, c.mp[idx*D:(idx+1)*D], c.pp[idx*D*D:(idx+1)*D*D], w.a, dw)
}

// scalarMarginal returns H·x and H·P·Hᵀ.
func scalarMarginal(x, P, h []float64) (mean, v float64) {
	d := len(h)
	for i, hi := range h {
		if hi == 0 {
			continue
		}
		mean += hi * x[i]
		for j, hj := range h {
			v += hi * hj * P[i*d+j]
		}
	}
	return mean, v
}
