package kernel

// Spatial is a covariance function over product feature vectors (e.g.
// coordinates, or latitude/longitude). The spatio-temporal prior is the
// separable product k_t(t, t')·k_p(p, p').
type Spatial interface {
	// Cov returns k(p, q) for two feature vectors of equal length.
	Cov(p, q []float64) float64
	// Gram writes the n×n matrix K[i,j] = k(features[i], features[j])
	// row-major into dst (length n²). It returns an error if the feature
	// vectors do not all have the kernel's dimension or are not finite.
	Gram(dst []float64, features [][]float64) error
	// Params describes the kernel's hyperparameters.
	Params
	// Clone returns an independent copy.
	Clone() Spatial
}
