package cvi

import "math"

// Factorised lifts a Scalar likelihood to a bin: products are conditionally
// independent given f, so the expectation needs only marginal variances.
type Factorised struct {
	Scalar
}

// Joint returns false.
func (Factorised) Joint() bool { return false }

// Expect sums the per-product expectations of the observed products.
func (l Factorised) Expect(obs []Obs, mean, vars, grad, curv []float64) float64 {
	var e float64
	for k, o := range obs {
		if math.IsNaN(o.Y) {
			grad[k], curv[k] = 0, 0
			continue
		}
		ek, g, h := l.Scalar.Expect(o, mean[k], vars[k])
		e += ek
		grad[k], curv[k] = g, h
	}
	return e
}

// ExpectParamGrad sums the per-product parameter gradients.
func (l Factorised) ExpectParamGrad(obs []Obs, mean, vars, grad []float64) float64 {
	var e float64
	for k, o := range obs {
		if math.IsNaN(o.Y) {
			continue
		}
		e += l.Scalar.ExpectParamGrad(o, mean[k], vars[k], grad)
	}
	return e
}

// LogPredictive writes the per-product log predictive densities.
func (l Factorised) LogPredictive(obs []Obs, mean, vars, dst []float64) {
	for k, o := range obs {
		if math.IsNaN(o.Y) {
			dst[k] = math.NaN()
			continue
		}
		dst[k] = l.Scalar.LogPredictive(o, mean[k], vars[k])
	}
}

// NoiseVariance returns the Scalar's noise variance.
func (l Factorised) NoiseVariance() float64 { return l.Scalar.NoiseVariance() }

// NoiseVarianceAt returns the Scalar's noise variance at the given level
// (its NoiseVariance if it has no level-dependent noise).
func (l Factorised) NoiseVarianceAt(level float64) float64 {
	if ln, ok := l.Scalar.(LevelNoiser); ok {
		return ln.NoiseVarianceAt(level)
	}
	return l.Scalar.NoiseVariance()
}

// parallelizable reports whether the engine may evaluate l's bins on
// several goroutines: l is Parallel, or Factorised (a Scalar's methods are
// safe for concurrent use).
func parallelizable(l Likelihood) bool {
	switch l.(type) {
	case Parallel, Factorised:
		return true
	}
	return false
}

// newWorker returns a likelihood for one more goroutine evaluating l's
// bins: a Parallel likelihood's Worker, or a Factorised one itself.
func newWorker(l Likelihood) Likelihood {
	if p, ok := l.(Parallel); ok {
		return p.Worker()
	}
	return l
}
