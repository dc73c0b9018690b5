// Package spec describes a DCGP model as plain data — temporal and product
// kernels, likelihood, diffusion graph, fit options — decodable from TOML
// with every key checked, and builds the filter.Model and cvi.Likelihood
// it names. The command line's `fit`, the experiments and the daemon all
// configure models through it, so one schema is documented once.
package spec
