package cvi

import (
	"math"

	"github.com/dcgpd/dcgpd/internal/mathx"
)

// rateZ is the standard normal 95% quantile: the rate's 5% and 95%
// quantiles are μ(m ∓ rateZ·√v).
const rateZ = 1.6448536269514722

// rateNodes is the Gauss–Hermite rule for the softplus link's rate
// moments (μ is smooth and grows linearly, so 64 nodes are exact to
// rounding for any variance a fit produces).
const rateNodes = 64

// RateLinker is a count likelihood whose latent f is the link's argument:
// the demand is the rate μ(f), not f (Poisson, CensoredPoisson).
type RateLinker interface {
	Link() Link
}

// RateMoments returns the mean, variance and 5% / 95% quantiles of the
// rate μ(f) for f ~ N(m, v). For the exp link μ = eᶠ is lognormal:
//
//	mean = e^{m+v/2},  var = (e^v − 1)·e^{2m+v},  q = e^{m ∓ 1.645√v};
//
// for the softplus link the mean and variance are Gauss–Hermite
// expectations and the quantiles softplus(m ∓ 1.645√v) (μ is increasing,
// so quantiles map through it). Negative or NaN v gives NaN.
func (k Link) RateMoments(m, v float64) (mean, variance, q05, q95 float64) {
	if !(v >= 0) {
		nan := math.NaN()
		return nan, nan, nan, nan
	}
	sd := math.Sqrt(v)
	if k == SoftplusLink {
		g := gaussHermite(rateNodes)
		mean = g.Expect(m, v, mathx.Softplus)
		second := g.Expect(m, v, func(f float64) float64 { s := mathx.Softplus(f); return s * s })
		return mean, math.Max(second-mean*mean, 0), mathx.Softplus(m - rateZ*sd), mathx.Softplus(m + rateZ*sd)
	}
	mean = math.Exp(m + v/2)
	// (e^v − 1)·e^{2m+v} with expm1 for small v.
	variance = math.Expm1(v) * math.Exp(2*m+v)
	return mean, variance, math.Exp(m - rateZ*sd), math.Exp(m + rateZ*sd)
}
