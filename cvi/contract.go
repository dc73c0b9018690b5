package cvi

// The likelihood contract. The engine (Engine, Online) needs from a
// likelihood only the methods of Likelihood; a likelihood can offer more
// through the optional interfaces below, which the engine finds by type
// assertion and uses when present:
//
//   - Parallel: expectations of different bins on several goroutines;
//   - FusedExpecter: the parameter gradient in the expectation's pass;
//   - ParamHolder: told which of its parameters learning holds fixed;
//   - SearchRuler: a cheaper expectation rule while learning searches;
//   - ParamValuer: parameter values in the user's units, where some are
//     not softplus⁻¹ of their value;
//   - LevelNoiser: a noise variance that depends on the cell's level
//     (Obs.Level), for predictive intervals.
//
// A likelihood per product (Scalar) becomes a Likelihood through
// Factorised, which is Parallel by the Scalar contract. The package's
// likelihoods: Gaussian, Tobit, Poisson and CensoredPoisson (Scalar) and
// Diffusion (Likelihood with every optional interface).
//
// Parameters. NumParams, ParamNames, Params and SetParams expose a
// likelihood's parameters in an unconstrained parameterisation: softplus⁻¹
// of a positive parameter, the raw value otherwise (the diffusion sink,
// π = tanh|θ|). SetParams is all or nothing. After SetParams the engine
// must be told (Engine.SetParams does both).

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

// Scalar is a likelihood that factorises over scalar observations.
//
// All methods must be safe for concurrent use as long as SetParams and
// the configuration setters are not called concurrently: the engine
// evaluates a Factorised likelihood's bins on all cores with one Scalar.
// A variance v = 0 in Expect and LogPredictive means q(f) is a point mass
// at m (f = m is plugged in); v < 0, NaN or +Inf gives NaN.
type Scalar interface {
	// LogLik returns log p(y|f) and its first and second derivatives in f.
	LogLik(o Obs, f float64) (l, dl, d2l float64)
	// Expect returns E = E_{N(f|m,v)}[log p(y|f)], dE/dm and d²E/dm²
	// (= 2 dE/dv).
	Expect(o Obs, m, v float64) (e, dm, d2m float64)
	// LogPredictive returns log ∫ p(y|f) N(f|m,v) df (for NLPD).
	LogPredictive(o Obs, m, v float64) float64
	// NoiseVariance returns the observation noise variance added to the
	// latent variance in predictive intervals (0 if there is none).
	NoiseVariance() float64
	// ExpectParamGrad adds dE/dθ for the likelihood's unconstrained
	// parameters θ into grad (length NumParams) and returns E.
	ExpectParamGrad(o Obs, m, v float64, grad []float64) float64
	// NumParams returns the number of likelihood parameters.
	NumParams() int
	// ParamNames returns a name per parameter, e.g. "variance".
	ParamNames() []string
	// Params writes the unconstrained parameters (softplus⁻¹ of positive
	// ones) into dst, which must have length NumParams, and returns it. A
	// nil dst allocates.
	Params(dst []float64) []float64
	// SetParams sets the parameters from unconstrained values. It returns
	// an error, leaving the likelihood unchanged, if src has the wrong
	// length, a value is not finite, or it maps to an invalid parameter.
	SetParams(src []float64) error
}

// Parallel is a Likelihood whose bins can be evaluated on several
// goroutines. Worker returns a likelihood for one more goroutine — a copy
// with its own scratch memory, sharing the read-only state — valid until
// the parameters change.
type Parallel interface {
	Likelihood
	Worker() Likelihood
}

// FusedExpecter is a Likelihood that gives the parameter gradient in the
// same pass as the expectation and its mean derivatives, at little extra
// cost (the joint diffusion expectation, whose points dominate).
// ExpectFused writes grad and curv as Expect does, adds dE/dθ into pgrad
// as ExpectParamGrad does, and returns E (NaN on failure).
type FusedExpecter interface {
	Likelihood
	ExpectFused(obs []Obs, mean, cov, grad, curv, pgrad []float64) float64
}

// ParamHolder is a Likelihood that can skip work for the parameters
// learning holds fixed. Learn calls HoldParams with one flag per parameter
// (ParamNames order) before it starts.
type ParamHolder interface {
	HoldParams(held []bool)
}

// SearchRuler is a Likelihood with two expectation rules: a cheaper one
// for learning's search over hyperparameters and the final one. Learn
// switches to the search rule with SetSearch(true) and back with
// SetSearch(false) before the final solve. RuleName names the rule in use
// when the two differ ("16-point rule"), and is empty otherwise.
type SearchRuler interface {
	SetSearch(on bool)
	RuleName() string
}

// ParamValuer is a Likelihood with a parameter that is not stored as
// softplus⁻¹ of its value (the diffusion sink, π = tanh|θ|). ParamValues
// writes every parameter's value in the user's units (ParamNames order)
// into dst, which must have length NumParams, and returns it; a nil dst
// allocates. For a likelihood without it, every value is softplus of
// Params.
type ParamValuer interface {
	ParamValues(dst []float64) []float64
}

// LevelNoiser is a likelihood whose observation noise variance depends on
// the cell's level (Obs.Level): NoiseVarianceAt returns the noise variance
// of an observation at that level (σ² + c·max(level, 0) with level noise
// on, NoiseVariance otherwise). Gaussian, Tobit, Diffusion and a
// Factorised over them implement it.
type LevelNoiser interface {
	NoiseVarianceAt(level float64) float64
}

// NoiseVarianceAt returns l's noise variance for an observation at the
// given level: l's NoiseVarianceAt where l is a LevelNoiser, its
// NoiseVariance otherwise. Predictive intervals of a forecast pass the
// level of the forecast's target bin.
func NoiseVarianceAt(l Likelihood, level float64) float64 {
	if ln, ok := l.(LevelNoiser); ok {
		return ln.NoiseVarianceAt(level)
	}
	return l.NoiseVariance()
}
