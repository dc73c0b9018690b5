// Package mathx holds the scalar transforms shared by the kernels, the
// likelihoods and the diffusion parameters: softplus, which maps an
// unconstrained real to a positive hyperparameter, its inverse and its
// slope. Every positive hyperparameter in dcgpd is stored as
// SoftplusInv of its value, so optimisers can move it freely.
package mathx
