package filter

import "errors"

// ErrNumerical is wrapped by the errors of a run that met a covariance
// that is not positive definite or a value that is not finite: the
// hyperparameters or the sites are extreme (a variance or site precision
// near overflow, a lengthscale far below the bin spacing), not the input's
// shape, which is checked first. Test with errors.Is; cvi.ErrNumerical is
// the same value.
var ErrNumerical = errors.New("numerical failure")
