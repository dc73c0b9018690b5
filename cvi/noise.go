package cvi

import (
	"fmt"

	"github.com/dcgpd/dcgpd/internal/mathx"
)

var varianceName = []string{"variance"}

// noise is the observation noise variance σ², the one parameter of the
// Gaussian and Tobit likelihoods, exposed as softplus⁻¹(σ²).
type noise struct {
	variance float64
}

// Variance returns the noise variance σ².
func (n *noise) Variance() float64 { return n.variance }

// NoiseVariance returns σ².
func (n *noise) NoiseVariance() float64 { return n.variance }

// NumParams returns 1.
func (n *noise) NumParams() int { return 1 }

// ParamNames returns ["variance"].
func (n *noise) ParamNames() []string { return varianceName }

// Params writes softplus⁻¹(σ²) into dst.
func (n *noise) Params(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, 1)
	}
	dst[0] = mathx.SoftplusInv(n.variance)
	return dst
}

// SetParams sets σ² = softplus(src[0]).
func (n *noise) SetParams(src []float64) error {
	v, err := setPositiveParam("variance", src)
	if err != nil {
		return err
	}
	n.variance = v
	return nil
}

// noParams is the parameter set of the count likelihoods: empty, and no
// additive noise.
type noParams struct{}

// NoiseVariance returns 0: counts carry no additive noise.
func (noParams) NoiseVariance() float64 { return 0 }

// NumParams returns 0.
func (noParams) NumParams() int { return 0 }

// ParamNames returns an empty list.
func (noParams) ParamNames() []string { return nil }

// Params returns dst unchanged (an empty slice if nil).
func (noParams) Params(dst []float64) []float64 {
	if dst == nil {
		dst = []float64{}
	}
	return dst
}

// SetParams accepts only an empty src.
func (noParams) SetParams(src []float64) error {
	if len(src) != 0 {
		return fmt.Errorf("cvi: want 0 parameters, got %d", len(src))
	}
	return nil
}
