// Package synth holds deterministic, seeded simulators of the datasets used
// in the DCGP paper (the independent sinusoids A, B, C and the
// spatio-temporal ST-1/ST-2), a loader and censoring simulator for the real
// Citi Bike 2018 counts, a fully simulated bike-share cluster for demos, and
// the paper's evaluation metrics (RMSE, R², "RMSE funct.", Gaussian NLPD).
//
// Every generator takes a uint64 seed and draws from math/rand/v2 PCG
// streams derived from it (one stream per stage, so changing one stage does
// not shift the draws of another). The same seed gives bit-identical data
// on a given architecture (Go may fuse multiply-adds on some); the numpy/JAX
// streams of the reference notebooks are not reproduced,
// only their procedures and parameters.
//
// All generators return a *Dataset: per-product features, the diffusion
// (transfer) matrix that generated the observations, and a Train and a Test
// Split. A Split is self-contained (time × product matrices over its own
// strictly increasing Times) because the protocols differ: A/B/C draw train
// and test on separate grids whose end points coincide, ST tests on the full
// grid that contains the train times, and the bike data is a random
// partition of one hourly grid. Split.Index locates rows in the common grid
// when there is one.
//
// Nothing here does I/O except ReadCitiBike.
package synth
