package mathx

import "math"

// Softplus returns log(1 + eˣ), computed without overflow for large x and
// without loss of precision for very negative x. It underflows to 0 (not a
// positive value) for x below about −745.
func Softplus(x float64) float64 {
	v, _ := SoftplusSlope(x)
	return v
}

// SoftplusSlope returns Softplus(x) and its derivative, the logistic
// sigmoid 1/(1 + e⁻ˣ), both without overflow.
func SoftplusSlope(x float64) (v, slope float64) {
	if x > 0 {
		e := math.Exp(-x)
		return x + math.Log1p(e), 1 / (1 + e)
	}
	e := math.Exp(x)
	return math.Log1p(e), e / (1 + e)
}

// SoftplusInv returns the x with Softplus(x) = v for v > 0, stable for tiny
// and huge v. It returns NaN for v <= 0 or NaN.
func SoftplusInv(v float64) float64 {
	if !(v > 0) {
		return math.NaN()
	}
	// log(eᵛ − 1) = v + log(1 − e⁻ᵛ).
	return v + math.Log(-math.Expm1(-v))
}
