package stream

import (
	"fmt"
	"slices"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/filter"
)

// followLevel re-estimates the prior mean's levels ([model.mean] level =
// "scale") from the window's smoothed demand (spec.Profile.EstimateScale)
// and re-converges the window's sites under the new mean, warm-started
// from e's sites moved to it, so that the head the online path continues
// from is of the demand less the new mean. m is the model e ran with
// (res.model from start, nil: the stationary prior); res holds e's
// smoothed marginals and gets the new ones. With signal_power
// (job.signal) the GP's variances follow the level as well: res.model
// becomes res.model scaled by spec.SignalFactor's ratio of the new levels
// to the old, and the start it returns is start scaled alike (the state
// of the same process in the new units), which the head is re-filtered
// from.
func followLevel(job *resmoothJob, m *filter.Model, start *filter.State, e *cvi.Engine, res *resmoothResult) (*filter.State, error) {
	np := m.NumProducts()
	n := len(job.bins)
	times, obs, f := make([]float64, n), make([]cvi.Obs, 0, n*np), make([]float64, n*np)
	for i, b := range job.bins {
		times[i] = b.T
		obs = append(obs, b.Obs...)
		for k := range np {
			f[i*np+k] = res.mean[i][k] + job.cells.MeanAt(b.T, k)
		}
	}
	scale := make([]float64, np)
	job.base.EstimateScale(times, obs, f, np, job.scale, scale)
	if slices.Equal(scale, job.scale) {
		return start, nil
	}
	cells := job.cells
	cells.Mean = job.base.Scaled(scale)
	m, start, err := rescaleSignal(job, m, start, scale, res)
	if err != nil {
		return nil, err
	}
	e2, err := cvi.NewEngine(m, res.lik, cells.PrepareData(windowData(job.bins, np)))
	if err != nil {
		return nil, err
	}
	sites := e.Sites()
	delta := make([]float64, np)
	for i, bin := range e.Bins() {
		meanShift(job.cells, cells, job.bins[bin].T, delta)
		l1, l2 := sites.Bin(i)
		shiftSite(l1, l2, delta)
	}
	if err := e2.SetSites(sites); err != nil {
		return nil, err
	}
	steps, elbo, err := e2.Converge(1, job.tol, resmoothMaxSteps)
	if err != nil {
		return nil, fmt.Errorf("CVI under the new level: %w", err)
	}
	if err := smoothed(e2, n, res); err != nil {
		return nil, err
	}
	res.steps += steps
	res.elbo = elbo
	res.cells, res.scale = cells, scale
	return start, nil
}

// rescaleSignal returns the model the window is re-converged under at
// the levels scale and the start it runs from: m and start as they are
// without signal_power or when the factor does not move; otherwise
// res.model scaled by the ratio of the new levels' spec.SignalFactor to
// the old's (which res.model and res.rescaled then record) and start
// scaled alike.
func rescaleSignal(job *resmoothJob, m *filter.Model, start *filter.State, scale []float64, res *resmoothResult) (*filter.Model, *filter.State, error) {
	if job.signal == 0 {
		return m, start, nil
	}
	factor := spec.SignalFactor(scale, job.signal) / spec.SignalFactor(job.scale, job.signal)
	if factor == 1 {
		return m, start, nil
	}
	scaled, err := spec.ScaleSignal(res.model, factor)
	if err != nil {
		return nil, nil, err
	}
	res.model, res.rescaled = scaled, true
	if start == nil {
		return scaled, nil, nil
	}
	st := spec.ScaleState(*start, factor)
	if m, err = scaled.WithStart(st.Time, st); err != nil {
		return nil, nil, fmt.Errorf("window start at the new level: %w", err)
	}
	return m, &st, nil
}

// meanShift writes into delta the new prior mean less the old at model
// time t, per product.
func meanShift(old, cells spec.Boundary, t float64, delta []float64) {
	for k := range delta {
		delta[k] = cells.MeanAt(t, k) - old.MeanAt(t, k)
	}
}

// shiftSite moves a Gaussian site on g = f − m_old, exp(nat1·g −
// ½ gᵀ·nat2·g), to g' = f − m_new = g − delta: nat1 −= nat2·delta (nat2
// diagonal, one value per product, or a full N_p × N_p block).
func shiftSite(nat1, nat2, delta []float64) {
	np := len(nat1)
	if len(nat2) == np {
		for k := range nat1 {
			nat1[k] -= nat2[k] * delta[k]
		}
		return
	}
	for k := range nat1 {
		var s float64
		for j := range np {
			s += nat2[k*np+j] * delta[j]
		}
		nat1[k] -= s
	}
}
