// Package filter is the Kalman filter and smoother of dcgpd: the separable
// spatio-temporal GP prior over N_p products (Model: a temporal kernel in
// state-space form from package kernel, times a product kernel), run as a
// linear state-space model over irregular time steps whose observations
// are Gaussian pseudo-observations ("sites") per time bin. It knows
// nothing about likelihoods.
//
// Entry points: Filter (forward pass and log marginal likelihood), Smooth
// (Rauch–Tung–Striebel, with the smoothed states Posterior.Predict needs),
// SmoothMarginals (the per-bin marginals of f only, by a modified
// Bryson–Frazier backward pass), and Online (the filter one bin at a time,
// with forecasts, for the daemon).
//
// Routes. An Independent product kernel with diagonal sites filters each
// product as its own chain; chains of state dimension 2 take an unrolled
// scalar recursion (twostate.go); everything else runs one coupled chain
// whose state stacks the products' copies of the temporal state (kalmanstep.go
// holds its prediction, update and backward steps, blocks.go the
// block-structured transition products).
//
// Conventions. Small matrices are stored row-major in plain []float64 so
// that the hot loops allocate nothing (internal/linalg holds the shared
// routines). A run starts from the stationary prior at its first bin, or,
// for a model made by Model.WithStart, from a known state at an earlier
// time t0 (an Online filter's saved state): that is how a fixed-lag window
// of the last bins is re-smoothed with everything before it summarised in
// its prior.
//
// Size. The package is about 4,900 lines without tests, over the
// project's 3,000-line mark for one package, because its passes share one
// set of unexported steps per route: Smooth (posterior.go), the online
// filter (online.go) and SmoothMarginals (mbf.go) all run predictDense,
// updateDense and smoothDense (kalmanstep.go), the block products of
// blocks.go, and the two-state chains of twostate.go. A package per pass would have to
// export those steps and their scratch.
package filter
