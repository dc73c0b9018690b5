package geo

import (
	"math"
	"strconv"
)

// Metric says how the distance between two product feature vectors is
// measured; the product kernels (filter/kernel) and the diffusion graph
// (diffusion) both use it. The zero value is Euclidean.
type Metric int

const (
	// Euclidean is the straight-line distance between feature vectors of
	// any (common) dimension, in the features' own units.
	Euclidean Metric = iota
	// GreatCircle treats each feature vector as (latitude, longitude) in
	// degrees and measures the great-circle distance in metres on a sphere
	// of radius EarthRadius (Haversine). Lengthscales and cut-offs are then
	// in metres too.
	GreatCircle
	// Chordal is GreatCircle with the straight-line distance through the
	// Earth, 2R·sin(c/2) for central angle c (Chord): a Euclidean distance
	// in ℝ³, within a factor of about 1 − c²/24 of the great-circle
	// distance (under 0.1% up to about 1000 km).
	Chordal
)

// String returns the metric's name as the configuration writes it.
func (m Metric) String() string {
	switch m {
	case Euclidean:
		return "euclidean"
	case GreatCircle:
		return "great-circle"
	case Chordal:
		return "chordal"
	}
	return "Metric(" + strconv.Itoa(int(m)) + ")"
}

// Distance returns the distance between p and q under m (metres for the
// geographic metrics). It does not validate its arguments.
func (m Metric) Distance(p, q []float64) float64 {
	switch m {
	case GreatCircle:
		return Haversine(p[0], p[1], q[0], q[1])
	case Chordal:
		return Chord(p[0], p[1], q[0], q[1])
	}
	return math.Sqrt(m.SquaredDistance(p, q))
}

// SquaredDistance returns the squared distance between p and q under m.
// Euclidean distances are summed as Σ(p_k − q_k)², which is exactly zero
// for p = q. It does not validate its arguments.
func (m Metric) SquaredDistance(p, q []float64) float64 {
	if m == GreatCircle || m == Chordal {
		d := m.Distance(p, q)
		return d * d
	}
	var s float64
	for k := range p {
		t := p[k] - q[k]
		s += t * t
	}
	return s
}
