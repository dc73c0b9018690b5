package diffusion

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/geo"
)

// Metric selects how distances between product feature vectors are
// measured (see geo.Metric): Euclidean or GreatCircle. The zero value is
// Euclidean.
type Metric = geo.Metric

const (
	// Euclidean is the straight-line distance between feature vectors of
	// any (common) dimension, in the features' own units.
	Euclidean = geo.Euclidean
	// GreatCircle treats each feature vector as (latitude, longitude) in
	// degrees and measures the great-circle distance in metres.
	// Lengthscales and cut-offs are then in metres too.
	GreatCircle = geo.GreatCircle
)

// validateFeatures checks that features is non-empty, that every vector is
// finite and has the same non-zero dimension, and, for GreatCircle, that
// each vector is (lat, lon) with |lat| <= 90 and |lon| <= 360 degrees. It
// returns the common dimension. The graph supports Euclidean and
// GreatCircle only.
func validateFeatures(m Metric, features [][]float64) (int, error) {
	if m != Euclidean && m != GreatCircle {
		return 0, fmt.Errorf("diffusion: unknown metric %v", m)
	}
	if len(features) == 0 {
		return 0, fmt.Errorf("diffusion: no products (empty feature list)")
	}
	dim := len(features[0])
	if dim == 0 {
		return 0, fmt.Errorf("diffusion: product 0 has an empty feature vector")
	}
	if m == GreatCircle && dim != 2 {
		return 0, fmt.Errorf("diffusion: great-circle features must be (lat, lon), product 0 has %d values", dim)
	}
	for i, p := range features {
		if len(p) != dim {
			return 0, fmt.Errorf("diffusion: product %d has %d features, product 0 has %d", i, len(p), dim)
		}
		for k, v := range p {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("diffusion: feature %d of product %d is %v", k, i, v)
			}
		}
		if m == GreatCircle {
			if math.Abs(p[0]) > 90 {
				return 0, fmt.Errorf("diffusion: latitude %v of product %d is outside [-90, 90] degrees", p[0], i)
			}
			if math.Abs(p[1]) > 360 {
				return 0, fmt.Errorf("diffusion: longitude %v of product %d is outside [-360, 360] degrees", p[1], i)
			}
		}
	}
	return dim, nil
}
