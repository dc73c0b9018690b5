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
package cvi
