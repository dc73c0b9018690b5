package filter

import "math"

// Softplus returns log(1 + eˣ), computed without overflow for large x and
// without loss of precision for very negative x.
func Softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// SoftplusInv returns the x with Softplus(x) = v for v > 0, stable for tiny
// and huge v. It returns NaN for v <= 0.
func SoftplusInv(v float64) float64 {
	if !(v > 0) {
		return math.NaN()
	}
	// log(eᵛ − 1) = v + log(1 − e⁻ᵛ).
	return v + math.Log(-math.Expm1(-v))
}
