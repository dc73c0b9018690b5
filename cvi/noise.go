package cvi

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/mathx"
)

var (
	varianceName      = []string{"variance"}
	varianceSlopeName = []string{"variance", NoiseSlopeName}
)

// NoiseSlopeName is the parameter name of the level-dependent noise's slope
// c (see noise.SetLevelNoise).
const NoiseSlopeName = "noise_slope"

// noise is the observation noise of the Gaussian and Tobit likelihoods.
// By default it is one variance σ² for every observation, exposed as
// softplus⁻¹(σ²). With level noise on (SetLevelNoise) observation i has
// variance σ²ᵢ = σ² + c·max(Levelᵢ, 0): hourly counts vary roughly in
// proportion to their level, as a Poisson count does. c is a second
// parameter, softplus⁻¹(c), after σ².
type noise struct {
	variance float64
	slope    float64 // c; used only when level
	level    bool
}

// Variance returns the noise variance σ².
func (n *noise) Variance() float64 { return n.variance }

// NoiseVariance returns σ², the noise variance of an observation at level 0.
func (n *noise) NoiseVariance() float64 { return n.variance }

// NoiseVarianceAt returns the noise variance of an observation at the given
// level: σ² + c·max(level, 0) with level noise on, σ² otherwise.
func (n *noise) NoiseVarianceAt(level float64) float64 {
	if !n.level {
		return n.variance
	}
	return levelVariance(n.variance, n.slope, level)
}

// levelVariance is σ² + c·max(level, 0). A NaN level counts as 0.
func levelVariance(s2, c, level float64) float64 {
	if !(level > 0) {
		return s2
	}
	return s2 + c*level
}

// levelWeight is ∂σ²ᵢ/∂c = max(level, 0) (0 for a NaN level).
func levelWeight(level float64) float64 {
	if !(level > 0) {
		return 0
	}
	return level
}

// at returns observation o's noise variance.
func (n *noise) at(o Obs) float64 {
	if !n.level {
		return n.variance
	}
	return levelVariance(n.variance, n.slope, o.Level)
}

// SetLevelNoise turns level-dependent noise on with the starting slope c > 0
// (finite): the parameters become σ² and c.
func (n *noise) SetLevelNoise(slope float64) error {
	if err := checkSlope(slope); err != nil {
		return err
	}
	n.slope, n.level = slope, true
	return nil
}

// LevelNoise returns the slope c and whether level-dependent noise is on.
func (n *noise) LevelNoise() (slope float64, on bool) { return n.slope, n.level }

// checkSlope validates a starting noise slope.
func checkSlope(c float64) error {
	if !(c > 0) || math.IsInf(c, 0) {
		return fmt.Errorf("cvi: noise slope must be positive and finite, got %v", c)
	}
	return nil
}

// NumParams returns 1, or 2 with level noise.
func (n *noise) NumParams() int {
	if n.level {
		return 2
	}
	return 1
}

// ParamNames returns ["variance"], or ["variance", "noise_slope"] with
// level noise.
func (n *noise) ParamNames() []string {
	if n.level {
		return varianceSlopeName
	}
	return varianceName
}

// Params writes softplus⁻¹(σ²) (and softplus⁻¹(c) with level noise) into
// dst.
func (n *noise) Params(dst []float64) []float64 {
	if dst == nil {
		dst = make([]float64, n.NumParams())
	}
	dst[0] = mathx.SoftplusInv(n.variance)
	if n.level {
		dst[1] = mathx.SoftplusInv(n.slope)
	}
	return dst
}

// SetParams sets σ² = softplus(src[0]) (and c = softplus(src[1]) with
// level noise), all or nothing.
func (n *noise) SetParams(src []float64) error {
	if len(src) != n.NumParams() {
		return fmt.Errorf("cvi: want %d noise parameters (%v), got %d", n.NumParams(), n.ParamNames(), len(src))
	}
	v, err := setPositiveParam("variance", src[:1])
	if err != nil {
		return err
	}
	if n.level {
		c, err := setPositiveParam(NoiseSlopeName, src[1:])
		if err != nil {
			return err
		}
		n.slope = c
	}
	n.variance = v
	return nil
}

// addParamGrad adds dE/dθ into grad given dvar = dE/dσ²ᵢ of an observation
// at the given level: σ²ᵢ = σ² + c·max(level, 0), so dE/dσ² = dvar and
// dE/dc = dvar·max(level, 0), times the softplus slopes.
func (n *noise) addParamGrad(grad []float64, level, dvar float64) {
	grad[0] += dvar * softplusSlope(n.variance)
	if n.level {
		grad[1] += dvar * levelWeight(level) * softplusSlope(n.slope)
	}
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
