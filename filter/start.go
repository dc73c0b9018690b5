package filter

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"github.com/dcgpd/dcgpd/internal/linalg"
)

// modelStart is a Model's known latent state at time t0: one mean and
// covariance (row-major, exactly symmetric) per chain, in the layout of
// the filter that produced it. It is never written after WithStart, so
// clones share it.
type modelStart struct {
	t0 float64
	// scalar: one chain per product (an Independent model with diagonal
	// sites); otherwise one coupled chain of the whole (whitened) state.
	scalar    bool
	mean, cov [][]float64
}

// WithStart returns a copy of m (sharing nothing mutable with it, with the
// same hyperparameters) whose latent state at time t0 is distributed as s,
// instead of the stationary prior: every batch run (Filter, Smooth,
// SmoothMarginals) over times after t0 starts from s predicted to its
// first bin, Posterior.Predict before the first bin predicts from s, and
// LogLik is log p(sites | s). An Online filter of the returned model
// starts at s at time t0.
//
// s is a State as Online.Save returns it, from a filter of a model of the
// same shape: one chain per product when the product kernel is
// Independent and the sites are diagonal, else one coupled chain. That
// layout decides which sites a run of the returned model accepts (the two
// coincide with one product). The covariances are averaged with their
// transposes, as Online.Restore does. A started s (Started set) must be at
// time t0 (s.Time == t0); one that is not (the prior before any bin) is
// taken to hold at t0. s.LogLik is ignored.
//
// The start is conditional on the hyperparameters it was computed with:
// SetParams and Clone keep it as it is.
func (m *Model) WithStart(t0 float64, s State) (*Model, error) {
	if m == nil {
		return nil, errors.New("filter: nil model")
	}
	if math.IsNaN(t0) || math.IsInf(t0, 0) {
		return nil, fmt.Errorf("filter: start time not finite: %v", t0)
	}
	if s.Started && s.Time != t0 {
		return nil, fmt.Errorf("filter: start state is at time %v, not %v", s.Time, t0)
	}
	np := m.np
	nc := len(s.Mean)
	if len(s.Cov) != nc {
		return nil, fmt.Errorf("filter: start state has %d means but %d covariances", nc, len(s.Cov))
	}
	st := &modelStart{t0: t0}
	dims := make([]int, nc)
	switch {
	case nc == np && m.indep && np > 1:
		st.scalar = true
		for k := range dims {
			dims[k] = m.kernelOf(k).Dim()
		}
	case nc == 1:
		st.scalar = m.indep && np == 1
		dims[0] = m.StateDim()
	default:
		if m.indep && np > 1 {
			return nil, fmt.Errorf("filter: start state has %d chains, want %d (one per product, diagonal sites) or 1 (full sites)", nc, np)
		}
		return nil, fmt.Errorf("filter: start state has %d chains, want 1", nc)
	}
	st.mean, st.cov = make([][]float64, nc), make([][]float64, nc)
	for c, D := range dims {
		if len(s.Mean[c]) != D || len(s.Cov[c]) != D*D {
			return nil, fmt.Errorf("filter: start chain %d has a mean of length %d and a covariance of %d entries, want %d and %d", c, len(s.Mean[c]), len(s.Cov[c]), D, D*D)
		}
		if !linalg.Finite(s.Mean[c]) || !linalg.Finite(s.Cov[c]) {
			return nil, fmt.Errorf("filter: start chain %d is not finite", c)
		}
		st.mean[c] = append([]float64(nil), s.Mean[c]...)
		st.cov[c] = append([]float64(nil), s.Cov[c]...)
		linalg.Symmetrize(st.cov[c], D)
		// A variance below zero by more than rounding is not a state.
		scale := 1.0
		for i := 0; i < D; i++ {
			scale = math.Max(scale, math.Abs(st.cov[c][i*D+i]))
		}
		for i := 0; i < D; i++ {
			if v := st.cov[c][i*D+i]; v < -1e-10*scale {
				return nil, fmt.Errorf("filter: start chain %d has a negative variance %v at %d", c, v, i)
			}
		}
	}
	c := m.Clone()
	c.start = st
	return c, nil
}

// WithoutStart returns a copy of m whose runs start from the stationary
// prior at their first bin.
func (m *Model) WithoutStart() *Model {
	c := m.Clone()
	c.start = nil
	return c
}

// Start returns the model's start time and state (a deep copy, with
// Started set, Time t0 and LogLik 0); ok is false when runs start from the
// stationary prior.
func (m *Model) Start() (t0 float64, s State, ok bool) {
	st := m.start
	if st == nil {
		return 0, State{}, false
	}
	s = State{Started: true, Time: st.t0}
	for c := range st.mean {
		s.Mean = append(s.Mean, append([]float64(nil), st.mean[c]...))
		s.Cov = append(s.Cov, append([]float64(nil), st.cov[c]...))
	}
	return st.t0, s, true
}

// check returns an error unless a run with one chain per product (scalar)
// or one coupled chain over the times can start from st.
func (st *modelStart) check(scalar bool, np int, times []float64) error {
	if st.scalar != scalar && np > 1 {
		if st.scalar {
			return errors.New("filter: the model's start has one chain per product (diagonal sites) but the sites are full")
		}
		return errors.New("filter: the model's start is one coupled chain (full sites) but the sites are diagonal")
	}
	if len(times) > 0 && !(times[0] > st.t0) {
		return fmt.Errorf("filter: first bin at %v, not after the model's start at %v", times[0], st.t0)
	}
	return nil
}

// chain returns the start's mean and covariance of chain c (the product
// for per-product chains, 0 for the coupled one).
func (st *modelStart) chain(c int) (mean, cov []float64) {
	if len(st.mean) == 1 {
		c = 0
	}
	return st.mean[c], st.cov[c]
}

// predictStart writes the start of chain ci predicted dt after t0 into
// mp, pp, using a (d×d) as the transition's scratch.
func predictStart(mp, pp, a []float64, st *modelStart, ci int, kern kernel.Temporal, dt float64, w *denseWork) {
	d := kern.Dim()
	m0, p0 := st.chain(ci)
	kern.Transition(a, dt)
	kernel.ProcessNoise(kern, w.q, dt, w.kscratch)
	w.tb.set(a, w.q, d, len(m0)/d, false)
	predictDense(mp, pp, m0, p0, &w.tb, w)
}
