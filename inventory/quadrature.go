package inventory

import (
	"math"

	"gonum.org/v1/gonum/integrate/quad"
)

// normalRule returns n Gauss–Hermite nodes and weights for the standard
// normal: Σ w_i g(z_i) ≈ E g(Z), exact for polynomials of degree ≤ 2n−1.
// One node is z = 0 with weight 1 (the plug-in of the mean).
func normalRule(n int) (z, w []float64) {
	z, w = make([]float64, n), make([]float64, n)
	if n == 1 {
		w[0] = 1
		return z, w
	}
	quad.Hermite{}.FixedLocations(z, w, math.Inf(-1), math.Inf(1))
	for i := range z {
		z[i] *= math.Sqrt2
		w[i] /= math.SqrtPi
	}
	return z, w
}
