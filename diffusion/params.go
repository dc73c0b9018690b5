package diffusion

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/mathx"
)

// LengthscaleFromRaw returns the unconstrained parameterisation of the
// lengthscale, ℓ = softplus(θ) = log(1 + e^θ), and dℓ/dθ = sigmoid(θ), both
// without overflow. ℓ underflows to 0 (an invalid lengthscale) for θ below
// about −745.
func LengthscaleFromRaw(theta float64) (ell, dEll float64) {
	return mathx.SoftplusSlope(theta)
}

// LengthscaleToRaw returns θ with softplus(θ) = ell, accurate for tiny and
// huge ell; ell must be finite and > 0.
func LengthscaleToRaw(ell float64) (float64, error) {
	if !(ell > 0) || math.IsInf(ell, 1) {
		return 0, fmt.Errorf("diffusion: lengthscale %v must be finite and > 0", ell)
	}
	return mathx.SoftplusInv(ell), nil
}

// SinkFromRaw returns π = tanh(|θ|), capped at the largest float64 below 1,
// and dπ/dθ = sign(θ)(1 − tanh²θ) with sign(0) = +1 (the right derivative,
// so an ascent step from θ = 0 with ∂L/∂π > 0 raises π).
//
// Why a reflection: a monotone map of ℝ onto [0, 1) is either flat below
// the point where it reaches 0 (a clipped map: an optimiser that overshoots
// sees a zero gradient and stays there) or never reaches 0 (sigmoid: the
// reference's π₀ = 0 means θ = −∞, stuck for good). tanh(|θ|) reaches 0 at
// θ = 0 with slope ±1, so a gradient step leaves 0 whenever the likelihood
// favours a positive π; when it favours π = 0 the iterates stay within
// about one step size of θ = 0. To hold π at exactly 0, fix it rather than
// learn it.
func SinkFromRaw(theta float64) (pi, dPi float64) {
	a := math.Abs(theta)
	pi = math.Tanh(a)
	if pi >= 1 {
		pi = math.Nextafter(1, 0)
	}
	c := math.Cosh(a)
	dPi = 1 / (c * c)
	if theta < 0 {
		dPi = -dPi
	}
	return pi, dPi
}

// SinkToRaw returns the non-negative θ with SinkFromRaw(θ) = pi, for pi in
// [0, 1).
func SinkToRaw(pi float64) (float64, error) {
	if !(pi >= 0 && pi < 1) {
		return 0, fmt.Errorf("diffusion: sink probability %v must be in [0, 1)", pi)
	}
	return math.Atanh(pi), nil
}
