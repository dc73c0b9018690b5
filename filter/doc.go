// Package filter holds the Gaussian-process machinery of dcgpd that knows
// nothing about likelihoods: temporal kernels in linear state-space (SDE)
// form, kernels over product features, the separable spatio-temporal prior,
// and a Kalman filter and Rauch-Tung-Striebel smoother over irregular time
// steps whose observations are Gaussian pseudo-observations ("sites") per
// time bin.
//
// Conventions. Small matrices are stored row-major in plain []float64 so
// that the hot loops allocate nothing; gonum is used for the factorisations
// of larger blocks. A temporal kernel of state dimension d exposes its
// measurement row H (1×d), its stationary covariance Pinf (d×d) and its
// transition A(dt) = expm(F dt) (d×d); the process noise follows as
// Q(dt) = Pinf − A Pinf Aᵀ, which is exact for a stationary process.
// Hyperparameters are exposed in an unconstrained parameterisation
// (softplus of positive quantities) for optimisers.
//
// A run starts from the stationary prior at its first bin, or, for a model
// made by Model.WithStart, from a known state at an earlier time t0 (an
// Online filter's saved state): that is how a fixed-lag window of the last
// bins is re-smoothed with everything before it summarised in its prior.
package filter
