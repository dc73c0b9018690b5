package cvi

import "github.com/dcgpd/dcgpd/filter"

// ErrNumerical is wrapped by the errors of inference that met a value that
// is not finite or a covariance that is not positive definite — in the
// Kalman filter and smoother or in a likelihood's expectation — at
// hyperparameters or data that are extreme, not malformed (shapes and
// values are checked first). It is the same value as filter.ErrNumerical,
// so one errors.Is test covers both. Learn treats such a trial point as
// infeasible and backs off.
var ErrNumerical = filter.ErrNumerical
