package spec

// Spec is a model configuration: the [model] and [fit] tables of a
// MODEL.toml file (see config.toml at the repository root for every key).
// Zero values mean "use the default".
type Spec struct {
	Model Model `toml:"model"`
	Fit   Fit   `toml:"fit"`
}

// Model configures the prior and the likelihood.
type Model struct {
	// Likelihood is gaussian | tobit | diffusion | poisson | censored-poisson.
	Likelihood string `toml:"likelihood"`
	// NoiseVariance is the starting observation noise variance (> 0);
	// 0 means "from the data" (a tenth of the observed variance).
	NoiseVariance float64 `toml:"noise_variance"`
	// NoiseFixed pins the noise variance.
	NoiseFixed bool `toml:"noise_fixed"`
	// LevelNoise makes the noise variance of a cell σ² + c·max(level, 0)
	// for its known level (cvi.Obs.Level), with the slope c learned like
	// σ² starting at NoiseSlope (gaussian, tobit and diffusion only).
	LevelNoise bool `toml:"level_noise"`
	// NoiseSlope is the starting c (> 0; 0 means DefaultNoiseSlope).
	NoiseSlope float64 `toml:"noise_slope"`
	// NoiseSlopeFixed pins c at NoiseSlope (level_noise only).
	NoiseSlopeFixed bool `toml:"noise_slope_fixed"`
	// Levels is a level source for LevelNoise that needs no prior mean
	// ([model.levels]).
	Levels Levels `toml:"levels"`
	// PerProduct gives every product its own copy of the temporal kernel
	// with its own hyperparameters (Independent product kernel only), as
	// in the paper's Datasets A–C.
	PerProduct bool `toml:"per_product"`
	// Temporal lists the summed temporal components.
	Temporal []Temporal `toml:"temporal"`
	// Product is the kernel over product features.
	Product Product `toml:"product"`
	// Diffusion configures the demand-transfer graph (diffusion likelihood).
	Diffusion Diffusion `toml:"diffusion"`
	// Mean is an explicit prior mean of the latent demand (see Mean).
	Mean Mean `toml:"mean"`
}

// Temporal is one summed component of the temporal kernel.
type Temporal struct {
	// Kernel is matern12 | matern32 | matern52 | periodic | quasiperiodic.
	Kernel string `toml:"kernel"`
	// Variance (default: from the data) and Lengthscale (default: from the
	// time grid) start the hyperparameters.
	Variance    float64 `toml:"variance"`
	Lengthscale float64 `toml:"lengthscale"`
	// Period (periodic kinds, required) and Harmonics J (1 to
	// MaxHarmonics; 0 here means DefaultHarmonics, but harmonics = 0
	// written in a file is an error).
	Period    float64 `toml:"period"`
	Harmonics int     `toml:"harmonics"`
	// MaternLengthscale and MaternOrder (12 or 32, default 12) of the
	// quasi-periodic envelope.
	MaternLengthscale float64 `toml:"matern_lengthscale"`
	MaternOrder       int     `toml:"matern_order"`
	// Fixed pins every hyperparameter of this component; FixedParams pins
	// the named ones (e.g. ["period"]).
	Fixed       bool     `toml:"fixed"`
	FixedParams []string `toml:"fixed_params"`
}

// Product is the kernel over product features.
type Product struct {
	// Kernel is independent (default) | matern12 | matern32 | matern52 |
	// rbf | separable-matern32 (product of 1-D Matérn-3/2 kernels, one per
	// feature, as in the paper's spatio-temporal experiments).
	Kernel string `toml:"kernel"`
	// Lengthscale applies to every feature dimension; Lengthscales gives
	// one per dimension. Metres for lat/lon features.
	Lengthscale  float64   `toml:"lengthscale"`
	Lengthscales []float64 `toml:"lengthscales"`
	// Variance (default 1) is pinned unless LearnVariance: it is not
	// identifiable from the temporal variance.
	Variance      float64 `toml:"variance"`
	LearnVariance bool    `toml:"learn_variance"`
	// Fixed pins the lengthscales.
	Fixed bool `toml:"fixed"`
}

// Diffusion configures the transfer of unsatisfied demand.
type Diffusion struct {
	// Lengthscale of the graph weights exp(−|p_i−p_j|²/(2ℓ²)) in feature
	// units (metres for lat/lon). Default: the median nearest-neighbour
	// distance between products.
	Lengthscale float64 `toml:"lengthscale"`
	// Sink is the probability that unsatisfied demand is lost (default 0).
	Sink float64 `toml:"sink"`
	// Steps of the diffusion operator (default 1).
	Steps int `toml:"steps"`
	// Mode is steps (default) | available (one step over only the products
	// that still had supply in the bin).
	Mode string `toml:"mode"`
	// Learn learns the lengthscale and the sink (DCGP-l); default fixed
	// (DCGP-f).
	Learn bool `toml:"learn"`
	// Transition is a CSV file "from,to,prob" with an explicit transition
	// matrix, replacing the graph.
	Transition string `toml:"transition"`
	// Neighbours keeps only the k nearest products per row; Cutoff drops
	// edges longer than this distance (0: all).
	Neighbours int     `toml:"neighbours"`
	Cutoff     float64 `toml:"cutoff"`
	// Expectation is joint (default: the expected log-likelihood over the
	// joint q(f_n) through the diffusion map) | meanonly (the reference's
	// approximation: diffuse the posterior mean only).
	Expectation string `toml:"expectation"`
	// Curvature is the sites' curvature in batch CVI: "" (default: exact
	// for diagonal sites, gauss-newton for full ones) | gauss-newton |
	// exact (Stein identity).
	Curvature string `toml:"curvature"`
	// Sites is diagonal (default; mean field: the expectation through the
	// diffusion map over the product of the per-product marginals,
	// diagonal sites, one filter chain per product for an independent
	// product kernel) | full (one N_p×N_p site per bin, a coupled filter
	// state).
	Sites string `toml:"sites"`
	// Points is the number of quasi-Monte Carlo points of the joint
	// expectation per bin (default 64) for the final posterior.
	Points int `toml:"points"`
	// LearnPoints is the number of points while the hyperparameters are
	// searched with full sites, and of the online refinement's first
	// Newton step (default 16, at most Points); with diagonal sites the
	// search uses Points.
	LearnPoints int `toml:"learn_points"`
}

// Fit configures learning.
type Fit struct {
	// MaxIterations bounds the optimiser's iterations (default 200).
	MaxIterations int `toml:"max_iterations"`
	// GradientTolerance is the optimality test: converged when every
	// component of the ELBO's gradient in log-parameters is at most this
	// times the number of observed cells (default 1e-3).
	GradientTolerance float64 `toml:"gradient_tolerance"`
	// Tolerance stops learning as stalled (not converged) when the ELBO
	// improves by less than this, relatively, over 3 iterations (default
	// 1e-6).
	Tolerance float64 `toml:"tolerance"`
	// Damping is the CVI step size β in (0, 1] (default 1, halved
	// automatically when a step lowers the ELBO).
	Damping float64 `toml:"damping"`
	// Learn false fits the sites at the starting hyperparameters only.
	Learn *bool `toml:"learn"`
	// Staged (default true): a diffusion fit first fits the Tobit
	// likelihood with the same prior and starts its kernel hyperparameters
	// and noise variance there (see Spec.Learn).
	Staged *bool `toml:"staged"`
	// Fallback (default false): when the search with the envelope gradient
	// stops with the gradient above the test, continue with central
	// differences of the ELBO (see cvi.LearnOptions.Fallback).
	Fallback bool `toml:"fallback"`
}
