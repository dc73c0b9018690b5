package diffusion

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/geo"
)

// Metric selects how distances between product feature vectors are
// measured. The zero value is Euclidean.
type Metric int

const (
	// Euclidean is the straight-line distance between feature vectors of
	// any (common) dimension, in the features' own units.
	Euclidean Metric = iota
	// GreatCircle treats each feature vector as (latitude, longitude) in
	// degrees and measures the haversine great-circle distance in metres on
	// a sphere of radius geo.EarthRadius. Lengthscales and cut-offs are then in
	// metres too.
	GreatCircle
)

// String returns the metric's name.
func (m Metric) String() string {
	switch m {
	case Euclidean:
		return "euclidean"
	case GreatCircle:
		return "great-circle"
	}
	return fmt.Sprintf("Metric(%d)", int(m))
}

// SquaredDistance returns the squared distance between p and q under m.
// Euclidean distances are summed as Σ(p_k − q_k)², which is exactly zero for
// p = q. It does not validate its arguments; see ValidateFeatures.
func (m Metric) SquaredDistance(p, q []float64) float64 {
	if m == GreatCircle {
		d := geo.Haversine(p[0], p[1], q[0], q[1])
		return d * d
	}
	var s float64
	for k := range p {
		t := p[k] - q[k]
		s += t * t
	}
	return s
}

// Distance returns the distance between p and q under m (metres for
// GreatCircle). It does not validate its arguments; see ValidateFeatures.
func (m Metric) Distance(p, q []float64) float64 {
	if m == GreatCircle {
		return geo.Haversine(p[0], p[1], q[0], q[1])
	}
	return math.Sqrt(m.SquaredDistance(p, q))
}

// ValidateFeatures checks that features is non-empty, that every vector is
// finite and has the same non-zero dimension, and, for GreatCircle, that
// each vector is (lat, lon) with |lat| <= 90 and |lon| <= 360 degrees. It
// returns the common dimension.
func (m Metric) ValidateFeatures(features [][]float64) (int, error) {
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
