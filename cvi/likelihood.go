package cvi

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/mathx"
)

// Obs is one scalar observation: sales Y of a product in a time bin with
// the supply that was available, and whether the sales were cut off by
// that supply (demand ≥ Supply). Supply = +Inf means unlimited supply.
// Censoring is this explicit flag, never a comparison of Y with Supply.
type Obs struct {
	Y, Supply float64
	Censored  bool
}

// Validate reports whether o is a usable observation: Y must be finite,
// Supply a number or +Inf (negative thresholds are allowed: standardised
// data have them; the CSV readers reject negative supply of real data),
// and a censored observation must have a finite supply. The likelihoods do not call it: on invalid
// input they return NaN or ±Inf rather than an error, so call Validate
// where data enter.
func (o Obs) Validate() error {
	switch {
	case math.IsNaN(o.Y) || math.IsInf(o.Y, 0):
		return fmt.Errorf("cvi: observation Y = %v is not finite", o.Y)
	case math.IsNaN(o.Supply) || math.IsInf(o.Supply, -1):
		return fmt.Errorf("cvi: observation supply = %v is not a number (+Inf means unlimited)", o.Supply)
	case o.Censored && math.IsInf(o.Supply, 1):
		return errors.New("cvi: censored observation with unlimited supply")
	}
	return nil
}

// Scalar is a likelihood that factorises over scalar observations.
//
// All methods are safe for concurrent use as long as SetParams and the
// configuration setters are not called concurrently. A variance v = 0 in
// Expect and LogPredictive means q(f) is a point mass at m (f = m is
// plugged in); v < 0, NaN or +Inf gives NaN.
type Scalar interface {
	// LogLik returns log p(y|f) and its first and second derivatives in f.
	LogLik(o Obs, f float64) (l, dl, d2l float64)
	// Expect returns E = E_{N(f|m,v)}[log p(y|f)], dE/dm and d²E/dm²
	// (= 2 dE/dv).
	Expect(o Obs, m, v float64) (e, dm, d2m float64)
	// LogPredictive returns log ∫ p(y|f) N(f|m,v) df (for NLPD).
	LogPredictive(o Obs, m, v float64) float64
	// ExpectParamGrad adds dE/dθ for the likelihood's unconstrained
	// parameters θ into grad (length NumParams) and returns E.
	ExpectParamGrad(o Obs, m, v float64, grad []float64) float64
	// NumParams returns the number of likelihood parameters.
	NumParams() int
	// ParamNames returns a name per parameter, e.g. "variance".
	ParamNames() []string
	// Params writes the unconstrained parameters (softplus⁻¹ of positive
	// ones) into dst, which must have length NumParams, and returns it. A
	// nil dst allocates.
	Params(dst []float64) []float64
	// SetParams sets the parameters from unconstrained values. It returns
	// an error, leaving the likelihood unchanged, if src has the wrong
	// length, a value is not finite, or it maps to an invalid parameter.
	SetParams(src []float64) error
}

// softplusSlope returns dv/dθ at v = softplus(θ), i.e. sigmoid(θ) = 1 − e⁻ᵛ.
func softplusSlope(v float64) float64 { return -math.Expm1(-v) }

// setPositiveParam decodes a single softplus-parameterised positive value.
func setPositiveParam(name string, src []float64) (float64, error) {
	if len(src) != 1 {
		return 0, fmt.Errorf("cvi: want 1 parameter (%s), got %d", name, len(src))
	}
	x := src[0]
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("cvi: parameter %s is not finite: %v", name, x)
	}
	v := mathx.Softplus(x)
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("cvi: parameter %s = softplus(%v) = %v is not a positive finite number", name, x, v)
	}
	return v, nil
}

// checkVariance validates a noise variance passed to a constructor.
func checkVariance(v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("cvi: noise variance must be positive and finite, got %v", v)
	}
	return nil
}

// checkNoParams validates the parameter count of a parameter-free family.
func checkNoParams(src []float64) error {
	if len(src) != 0 {
		return fmt.Errorf("cvi: want 0 parameters, got %d", len(src))
	}
	return nil
}

// badVariance reports whether v cannot be the variance of q(f).
func badVariance(v float64) bool { return !(v >= 0) || math.IsInf(v, 1) }
