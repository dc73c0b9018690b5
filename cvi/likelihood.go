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
//
// Level is a known, non-random level of the cell (for instance the prior
// mean of its demand). Only likelihoods with level-dependent noise read it
// (noise variance σ² + c·max(Level, 0)); its zero value leaves every
// likelihood as without it.
type Obs struct {
	Y, Supply float64
	Censored  bool
	Level     float64
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
	case math.IsNaN(o.Level) || math.IsInf(o.Level, 0):
		return fmt.Errorf("cvi: observation level = %v is not finite", o.Level)
	}
	return nil
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

// badVariance reports whether v cannot be the variance of q(f).
func badVariance(v float64) bool { return !(v >= 0) || math.IsInf(v, 1) }
