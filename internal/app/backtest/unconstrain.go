package backtest

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dcgpd/dcgpd/cvi"
)

// The revenue-management methods for unconstraining stocked-out sales
// (Weatherford & Pölt 2002 compare them), fitted to a sample of one
// product's bins: x[i] the sales, cens[i] true where they stopped at the
// supply (x[i] is then a lower bound of the demand). Both assume normal
// demand N(μ, σ²).

// Unconstraining stops when μ and σ move by less than unconstrainTol
// (relative to 1 + |μ| + σ), after at most unconstrainIter iterations,
// and keeps σ at least sigmaFloor (half a unit of demand), so that a
// sample whose uncensored values are all equal still has a spread.
const (
	unconstrainTol  = 1e-10
	unconstrainIter = 10000
	sigmaFloor      = 0.5
)

// emNormal fits N(μ, σ²) to a right-censored sample by Expectation-
// Maximisation (Dempster, Laird & Rubin 1977): the E-step takes each
// censored value's conditional moments E[X | X ≥ b] = μ + σλ(z) and
// E[X² | X ≥ b] = μ² + σ² + σλ(z)(μ + b), z = (b − μ)/σ, λ the inverse
// Mills ratio; the M-step sets μ and σ² to the completed sample's first
// two moments. Its fixed point is the censored-normal maximum-likelihood
// estimate (the M-step with the conditional second moment, not the
// imputed values' spread). It starts from the uncensored values' mean and
// spread; ok is false with fewer than two uncensored values (the estimate
// is then unbounded).
func emNormal(x []float64, cens []bool) (mu, sigma float64, ok bool) {
	mu, sigma, ok = uncensoredStart(x, cens)
	if !ok {
		return mu, sigma, false
	}
	n := float64(len(x))
	for it := 0; it < unconstrainIter; it++ {
		var s1, s2 float64
		for i, v := range x {
			if !cens[i] {
				s1 += v
				s2 += v * v
				continue
			}
			lam := cvi.InvMills((v - mu) / sigma)
			s1 += mu + sigma*lam
			s2 += mu*mu + sigma*sigma + sigma*lam*(mu+v)
		}
		m := s1 / n
		s := math.Max(math.Sqrt(math.Max(s2/n-m*m, 0)), sigmaFloor)
		done := math.Abs(m-mu)+math.Abs(s-sigma) < unconstrainTol*(1+math.Abs(mu)+sigma)
		mu, sigma = m, s
		if done {
			break
		}
	}
	return mu, sigma, true
}

// pdNormal fits N(μ, σ²) to a right-censored sample by Projection-
// Detruncation (Hopperstad's method as Weatherford & Pölt 2002 describe
// it): start from the whole sample's mean and spread (censored values
// taken as they are); replace each censored value b by the d with
// P(X ≥ d) = τ·P(X ≥ b) under the current fit (τ = 0.5: the median of
// the demand given it reached b); refit μ and σ (the completed sample's
// mean and maximum-likelihood spread); repeat to a fixed point. It
// returns the fit; detruncate gives a censored value's d under it.
func pdNormal(x []float64, cens []bool, tau float64) (mu, sigma float64) {
	n := float64(len(x))
	d := append([]float64(nil), x...)
	mu, sigma = moments(d, n)
	for it := 0; it < unconstrainIter; it++ {
		for i, v := range x {
			if cens[i] {
				d[i] = detruncate(v, mu, sigma, tau)
			}
		}
		m, s := moments(d, n)
		done := math.Abs(m-mu)+math.Abs(s-sigma) < unconstrainTol*(1+math.Abs(mu)+sigma)
		mu, sigma = m, s
		if done {
			break
		}
	}
	return mu, sigma
}

// detruncate is PD's value for a sale b that stopped at the supply: the d
// with P(X ≥ d) = τ·P(X ≥ b) for X ~ N(μ, σ²), never below b.
func detruncate(b, mu, sigma, tau float64) float64 {
	z := (b - mu) / sigma
	// P(X ≥ d) = τ·Q(z): d = μ + σ·Q⁻¹(τ·Q(z)), in logs for the far tail.
	logp := math.Log(tau) + cvi.LogSurvival(z)
	q := -distuv.UnitNormal.Quantile(math.Exp(logp)) // Q⁻¹(p) = −Φ⁻¹(p)
	if math.IsInf(q, 1) || math.IsNaN(q) {
		// p underflowed: far in the tail d → b (the tail's mass sits at b).
		return b
	}
	return math.Max(mu+sigma*q, b)
}

// truncatedMoments are the mean and standard deviation of X ~ N(μ, σ²)
// given X ≥ b.
func truncatedMoments(b, mu, sigma float64) (mean, sd float64) {
	z := (b - mu) / sigma
	lam := cvi.InvMills(z)
	v := sigma * sigma * (1 + z*lam - lam*lam)
	return mu + sigma*lam, math.Sqrt(math.Max(v, 0))
}

// uncensoredStart is the uncensored values' mean and maximum-likelihood
// spread (at least sigmaFloor); ok is false with fewer than two.
func uncensoredStart(x []float64, cens []bool) (mu, sigma float64, ok bool) {
	var s1, s2, n float64
	for i, v := range x {
		if !cens[i] {
			s1 += v
			s2 += v * v
			n++
		}
	}
	if n < 2 {
		return math.NaN(), math.NaN(), false
	}
	mu = s1 / n
	return mu, math.Max(math.Sqrt(math.Max(s2/n-mu*mu, 0)), sigmaFloor), true
}

// moments is the mean and maximum-likelihood spread (at least
// sigmaFloor) of the n values of v.
func moments(v []float64, n float64) (mu, sigma float64) {
	var s1, s2 float64
	for _, x := range v {
		s1 += x
		s2 += x * x
	}
	mu = s1 / n
	return mu, math.Max(math.Sqrt(math.Max(s2/n-mu*mu, 0)), sigmaFloor)
}
