package cvi

import "math"

// Likelihood is the observation model of one time bin over all NP
// products: what CVI needs from it is the expected log-likelihood under the
// Gaussian marginal q(f_n) and its derivatives in the mean.
type Likelihood interface {
	// Joint reports whether the expectation couples products: then cov in
	// Expect is the NP×NP joint covariance, curv is NP×NP and the sites are
	// full blocks; otherwise cov holds the NP marginal variances and curv
	// the NP diagonal curvatures.
	Joint() bool
	// Expect returns E = E_q[log p(y_n | f_n)] for the bin's observations
	// (NaN Y = unobserved) under q = N(mean, cov), and writes dE/dmean into
	// grad and d²E/dmean² into curv.
	Expect(obs []Obs, mean, cov, grad, curv []float64) float64
	// ExpectParamGrad adds dE/dθ for the likelihood's unconstrained
	// parameters into grad and returns E.
	ExpectParamGrad(obs []Obs, mean, cov, grad []float64) float64
	// LogPredictive writes log ∫ p(y_k | f) q(f) df per observed product
	// into dst (NaN where unobserved), for NLPD.
	LogPredictive(obs []Obs, mean, cov, dst []float64)
	// NoiseVariance returns the observation noise variance added to the
	// latent variance in predictive intervals (0 if not Gaussian-like).
	NoiseVariance() float64
	// NumParams, ParamNames, Params and SetParams expose the likelihood's
	// parameters, unconstrained, with the same contract as Scalar.
	NumParams() int
	ParamNames() []string
	Params(dst []float64) []float64
	SetParams(src []float64) error
}

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

// NoiseVariance returns the Scalar's noise variance if it has one.
func (l Factorised) NoiseVariance() float64 { return noiseVariance(l.Scalar) }

// noiseVariance reads the variance of Gaussian-like likelihoods.
func noiseVariance(s any) float64 {
	if v, ok := s.(interface{ Variance() float64 }); ok {
		return v.Variance()
	}
	return 0
}

// concurrentScalar marks the package's scalar likelihoods, whose Expect
// keeps no per-call state (stack buffers, read-only rules), so one value
// serves all of the engine's workers.
type concurrentScalar interface{ concurrentExpect() }

func (*Gaussian) concurrentExpect()        {}
func (*Tobit) concurrentExpect()           {}
func (*Poisson) concurrentExpect()         {}
func (*CensoredPoisson) concurrentExpect() {}

// parallelWorker returns a Worker for a Factorised likelihood over one of
// the package's scalars (the same value), or false.
func parallelWorker(l Likelihood) (interface{ Worker() Likelihood }, bool) {
	f, ok := l.(Factorised)
	if !ok {
		return nil, false
	}
	if _, ok := f.Scalar.(concurrentScalar); !ok {
		return nil, false
	}
	return sameWorker{l}, true
}

// sameWorker hands out its likelihood itself as every worker's.
type sameWorker struct{ l Likelihood }

func (s sameWorker) Worker() Likelihood { return s.l }
