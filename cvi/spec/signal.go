package spec

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/internal/mathx"
)

// MaxSignalPower bounds [model.mean] signal_power.
const MaxSignalPower = 2

// SignalFollowsLevel reports whether the GP's variances follow the prior
// mean's level (level = "scale" and signal_power > 0).
func (m Mean) SignalFollowsLevel() bool { return m.FollowsLevel() && m.SignalPower > 0 }

// SignalFactor returns the factor the GP's temporal variances carry at the
// levels s against the fitted level (every s_k = 1): (Π s_k)^(2p/N), the
// squared signal scale a = s̄^p, s̄ the geometric mean of the levels. The
// latent demand is then f = m + a·g with g the fitted GP: at p = 1 the
// deviations from the prior mean grow in proportion to the level, at
// p = 1/2 their variance does (as the level-dependent noise's). A nil s
// or p = 0 gives 1. Rising and falling levels are treated alike: a level
// that doubles and then halves returns to the factor it started from.
func SignalFactor(s []float64, p float64) float64 {
	if len(s) == 0 || p == 0 {
		return 1
	}
	var sl float64
	for _, v := range s {
		sl += math.Log(v)
	}
	return math.Exp(2 * p * sl / float64(len(s)))
}

// ScaleSignal returns a copy of m (without its start) whose temporal
// kernel variances are factor times m's, so that its latent process is
// √factor times m's in law. The product kernel's variance, if any, is
// kept: it multiplies the temporal ones.
func ScaleSignal(m *filter.Model, factor float64) (*filter.Model, error) {
	if !(factor > 0) || math.IsInf(factor, 0) {
		return nil, fmt.Errorf("signal scale factor %v: want finite and > 0", factor)
	}
	out := m.Clone()
	p := out.Params(nil)
	ScaleVariances(p, out.ParamNames(), factor)
	if err := out.SetParams(p); err != nil {
		return nil, fmt.Errorf("signal scale %v: %w", factor, err)
	}
	return out, nil
}

// ScaleVariances multiplies, in place, the temporal kernels' variances
// among the raw (softplus) model parameters p, named names as
// filter.Model.ParamNames, by factor.
func ScaleVariances(p []float64, names []string, factor float64) {
	if factor == 1 {
		return
	}
	for i, n := range names {
		if strings.HasPrefix(n, "temporal.") && strings.HasSuffix(n, "variance") {
			p[i] = mathx.SoftplusInv(factor * mathx.Softplus(p[i]))
		}
	}
}

// ScaleState returns the filter state of √factor times the latent
// process of s: means times √factor, covariances times factor (the state
// of a model scaled by ScaleSignal with the same factor).
func ScaleState(s filter.State, factor float64) filter.State {
	out := s
	r := math.Sqrt(factor)
	out.Mean = make([][]float64, len(s.Mean))
	for i, v := range s.Mean {
		out.Mean[i] = slices.Clone(v)
		for j := range out.Mean[i] {
			out.Mean[i][j] *= r
		}
	}
	out.Cov = make([][]float64, len(s.Cov))
	for i, v := range s.Cov {
		out.Cov[i] = slices.Clone(v)
		for j := range out.Cov[i] {
			out.Cov[i][j] *= factor
		}
	}
	return out
}

// validateSignal checks signal_power: finite, in [0, MaxSignalPower], and
// only with level = "scale".
func (m Mean) validateSignal() error {
	switch p := m.SignalPower; {
	case p == 0:
		return nil
	case math.IsNaN(p) || p < 0 || p > MaxSignalPower:
		return fmt.Errorf("model.mean.signal_power %v: want a value in [0, %v]", p, MaxSignalPower)
	case !m.FollowsLevel():
		return fmt.Errorf("model.mean.signal_power %v needs level = %q", p, LevelScale)
	}
	return nil
}
