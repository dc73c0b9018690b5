// Package cvi implements conjugate-computation variational inference (CVI)
// for the latent demand of dcgpd: scalar likelihoods with their exact
// derivatives, Gaussian–Hermite quadrature of expected log-likelihoods
// under a Gaussian marginal q(f) = N(m, v), natural-gradient site updates,
// the evidence lower bound (ELBO) and hyperparameter learning.
//
// Likelihoods (Gaussian, Tobit, Poisson, CensoredPoisson) implement Scalar.
// Censoring is an explicit flag on each observation (Obs.Censored), never
// a float comparison of sales with supply. The normal-tail helpers
// (LogSurvival, LogCDF, InvMills) are exact and stable for every real
// argument, so censored terms need no epsilon floor.
//
// Size. The package is about 8,800 lines without tests, over the
// project's 3,000-line mark for one package, because its parts call each
// other's unexported internals: the CVI engine (engine*.go), the online
// per-bin step (online*.go) and learning (learn*.go) run the diffusion
// likelihood's expectations and site updates (expect, expectCoupled,
// expectCoupledSparse, setLocal in diffusion*.go) on the engine's scratch
// and coupling pattern, and the diffusion code reuses that pattern. A
// subpackage for the diffusion likelihood would have to export those.
// The file prefixes (diffusion_, engine, learn, online) are the seams a
// split would follow.
package cvi
