package cvi

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/diffusion"
)

// ErrNoRealised is returned by RealisedDemand for a likelihood that has no
// realised-demand estimate (the count likelihoods: their demand is not
// f + ε).
var ErrNoRealised = errors.New("cvi: the likelihood has no realised-demand estimate")

// RealisedDemander is a likelihood that estimates the demand that occurred
// in a bin: product k's own demand y*_k = f_k + ε_k (noisy, uncensored,
// before any transfer of unmet demand) given the bin's observations and
// the posterior q(f) ≈ p(f | data). Gaussian, Tobit, Diffusion and a
// Factorised over Gaussian or Tobit implement it.
//
// RealisedDemand writes the mean and variance of y*_k into dmean[k] and
// dvar[k] from the posterior marginals N(mean[k], vars[k]) and obs (as
// the likelihood sees them: shifted by the prior mean, with their levels).
type RealisedDemander interface {
	RealisedDemand(obs []Obs, mean, vars, dmean, dvar []float64) error
}

// RealisedDemand is l's RealisedDemand, or ErrNoRealised where l has none.
//
// The estimate, per product k with noise variance σ²_k (at its level) and
// D_k(f) the inflow of unmet demand the likelihood adds to f_k (0 without
// diffusion):
//
//   - censored at u_k: the observation says f_k + D_k + ε_k ≥ u_k, so given
//     f, ε_k is N(0, σ²_k) truncated below at u_k − f_k − D_k, and
//     E[y*_k | data] = E_q[f_k + σ_k λ(a)], a = (u_k − f_k − D_k)/σ_k, λ
//     the inverse Mills ratio; its variance is Var_q[f_k + σ_k λ(a)] +
//     E_q[σ²_k (1 + aλ(a) − λ(a)²)] (the truncated normal's);
//   - observed uncensored: y_k minus what it received, R_k = Σ_i T_ik
//     (y*_i − u_i)⁺, the riders turned away at its censored neighbours i
//     (their own demand over their supply, y*_i as above given f; an
//     uncensored neighbour turned nobody away) moved by one step of the
//     diffusion's transition T: mean y_k − E[R_k], variance Var[R_k], the
//     (y*_i − u_i)⁺ independent given f (y_k and 0 without diffusion, or
//     with no censored neighbour);
//   - not observed: mean[k] and vars[k] + σ²_k.
//
// This is ε's conditional law given f and the observation, with q's
// marginals for f. The censored thresholds keep the likelihood's latent
// inflow D_k(f); the inflow an uncensored product received is the
// neighbours' realised excess, not the latent excess the likelihood
// moves: riders turned away are counts, noise included, and the latent
// inflow alone left the interval of an uncensored cell a fraction of the
// spread of what arrived (TestRealisedCoverageSimulated). The Gaussian
// likelihood treats every observation as the demand, so its estimate of
// an observed cell is y_k.
func RealisedDemand(l Likelihood, obs []Obs, mean, vars, dmean, dvar []float64) error {
	r, ok := l.(RealisedDemander)
	if !ok {
		return ErrNoRealised
	}
	n := len(obs)
	if len(mean) != n || len(vars) != n || len(dmean) != n || len(dvar) != n {
		return fmt.Errorf("cvi: realised demand of %d observations with %d means, %d variances, %d and %d outputs",
			n, len(mean), len(vars), len(dmean), len(dvar))
	}
	return r.RealisedDemand(obs, mean, vars, dmean, dvar)
}

// scalarRealiser is a Scalar with a per-cell realised-demand estimate.
type scalarRealiser interface {
	realised(o Obs, m, v float64) (mean, variance float64)
}

// RealisedDemand implements RealisedDemander for a Scalar that has the
// estimate (Gaussian, Tobit); ErrNoRealised otherwise.
func (l Factorised) RealisedDemand(obs []Obs, mean, vars, dmean, dvar []float64) error {
	s, ok := l.Scalar.(scalarRealiser)
	if !ok {
		return ErrNoRealised
	}
	for k, o := range obs {
		dmean[k], dvar[k] = s.realised(o, mean[k], vars[k])
	}
	return nil
}

// RealisedDemand implements RealisedDemander: an observed cell's demand
// is what was observed.
func (g *Gaussian) RealisedDemand(obs []Obs, mean, vars, dmean, dvar []float64) error {
	for k, o := range obs {
		dmean[k], dvar[k] = g.realised(o, mean[k], vars[k])
	}
	return nil
}

func (g *Gaussian) realised(o Obs, m, v float64) (float64, float64) {
	if math.IsNaN(o.Y) {
		return m, v + g.at(o)
	}
	return o.Y, 0
}

// RealisedDemand implements RealisedDemander (see the package function).
func (t *Tobit) RealisedDemand(obs []Obs, mean, vars, dmean, dvar []float64) error {
	for k, o := range obs {
		dmean[k], dvar[k] = t.realised(o, mean[k], vars[k])
	}
	return nil
}

// realised is the Tobit cell's estimate: the 1-D expectation over
// N(m, v) of the truncated normal's moments, with the quadrature of the
// censored expectation (graded where q is wide against σ). The
// integrand is centred at its value at m so that Var = E[(h−c)²] −
// E[h−c]² does not cancel.
func (t *Tobit) realised(o Obs, m, v float64) (float64, float64) {
	s2 := t.at(o)
	switch {
	case math.IsNaN(o.Y):
		return m, v + s2
	case !o.Censored:
		return o.Y, 0
	}
	u, s := o.Supply, math.Sqrt(s2)
	c, _ := truncatedMoments(u, m, s)
	e, e2, tv := t.expect3(m, v, func(f float64) (float64, float64, float64) {
		h, tv := truncatedMoments(u, f, s)
		return h - c, (h - c) * (h - c), tv
	}, transition(u, s2))
	return c + e, math.Max(e2-e*e, 0) + tv
}

// truncatedMoments returns the mean of x + ε given x + ε ≥ u for
// ε ~ N(0, s²), and the variance of ε given it: x + s·λ(a) and
// s²(1 − λ(a)(λ(a) − a)) at a = (u − x)/s. Above the threshold (a > 0) the
// mean is written u + s·(λ(a) − a), which does not cancel in the far tail
// (λ(a) − a ≈ 1/a); the variance factor is clamped at 0 against
// rounding where it is ≈ 1/a². λ comes from invMillsFast: the
// diffusion's point loop calls this per point and censored product.
func truncatedMoments(u, x, s float64) (mean, variance float64) {
	a := (u - x) / s
	lam, lmw := invMillsFast(a)
	if a > 0 {
		mean = u + s*lmw
	} else {
		mean = x + s*lam
	}
	return mean, s * s * math.Max(1-lam*lmw, 0)
}

// invMillsFast returns λ(z) and λ(z) − z as survivalFast does (relative
// error of λ below 1e-13), without its log(1 − Φ(z)), which the moments
// do not need and which took half of their time.
func invMillsFast(z float64) (lam, lamMinusZ float64) {
	if !(z > -millsMax && z < millsMax) {
		_, lam, lamMinusZ = survival(z)
		return lam, lamMinusZ
	}
	if z >= 0 {
		lam = 1 / mills(z)
		return lam, lam - z
	}
	h := -0.5 * z * z
	e := math.FMA(-0.5*z, z, -h)
	phi := invSqrt2Pi * expNeg(h) * (1 + e)
	lam = phi / (1 - phi*mills(-z))
	return lam, lam - z
}

// RealisedDemand implements RealisedDemander for the diffusion
// likelihood. A censored product's demand is the Tobit estimate with the
// diffusion map's inflow D(f) = g(f) − f in its threshold (the bin's
// operator, supply-aware where configured). What an uncensored product
// received is the realised unmet demand of its censored neighbours, not
// the latent excess: the riders turned away at i are (y*_i − u_i)⁺, y*_i
// = f_i + ε_i, and one step of the operator's transition sends T_ik of
// them to k, so k's own demand is y_k − Σ_i T_ik (y*_i − u_i)⁺ (an
// uncensored neighbour turned nobody away). Given f the (y*_i − u_i)⁺ are
// independent, each ε_i truncated below at u_i − f_i − D_i(f) as for the
// censored product's own estimate, with closed-form mean and variance
// (turnedAwayMoments); the inflow's mean is Σ T_ik·mean and its variance
// Σ T²_ik·variance. The expectation over q is taken with the likelihood's
// quasi-Monte Carlo points (its Points rule, antithetic pairs) over the
// product of the marginals N(mean[k], vars[k]): the published estimates
// carry marginal variances only. Where no product is censored and none
// can plausibly exceed its supply (as in the expectation) the map is the
// identity and each cell is the exact 1-D Tobit estimate. It keeps its
// own scratch, so it may run beside the likelihood's other methods.
func (d *Diffusion) RealisedDemand(obs []Obs, mean, vars, dmean, dvar []float64) error {
	np := d.np
	if len(obs) != np {
		return fmt.Errorf("cvi: diffusion bin has %d products, want %d", len(obs), np)
	}
	u, y := make([]float64, np), make([]float64, np)
	censored := false
	for k, o := range obs {
		u[k], y[k] = o.Supply, o.Y
		censored = censored || (o.Censored && !math.IsNaN(o.Y))
	}
	if !censored && d.excessNegligible(obs, mean, vars, 1) {
		for k, o := range obs {
			dmean[k], dvar[k] = d.tobitRealised(o, mean[k], vars[k])
		}
		return nil
	}
	op := diffusion.Operator{T: d.trans, Steps: d.opts.Steps}
	if d.opts.SupplyAware {
		avail := make([]bool, np)
		if err := diffusion.Available(avail, y, u); err != nil {
			return err
		}
		var masked diffusion.Transition
		var err error
		if op, err = d.trans.SupplyAware(&masked, avail); err != nil {
			return err
		}
	}
	return d.realisedPoints(op, obs, mean, vars, u, dmean, dvar)
}

// tobitRealised is the 1-D Tobit estimate with the product's noise.
func (d *Diffusion) tobitRealised(o Obs, m, v float64) (float64, float64) {
	tb := Tobit{noise: noise{variance: d.NoiseVarianceAt(o.Level)}}
	return tb.realised(Obs{Y: o.Y, Supply: o.Supply, Censored: o.Censored}, m, v)
}

// realisedPoints averages each product's realised demand over the
// points f = mean ± sd·z, centring every product at its value at the
// first point so that the variance does not cancel. At each point the
// operator op gives the latent inflow D(f) of the censored products'
// thresholds, and its transition's rows (one step) carry the censored
// products' realised excess to the uncensored ones.
func (d *Diffusion) realisedPoints(op diffusion.Operator, obs []Obs, mean, vars, u, dmean, dvar []float64) error {
	np := d.np
	ws := diffusion.NewWorkspace(np, op.Steps)
	f, inflow := make([]float64, np), make([]float64, np)
	inMean, inVar := make([]float64, np), make([]float64, np)
	sd, s, s2 := make([]float64, np), make([]float64, np), make([]float64, np)
	c, e, e2, tv := make([]float64, np), make([]float64, np), make([]float64, np), make([]float64, np)
	for k, o := range obs {
		s2[k] = d.NoiseVarianceAt(o.Level)
		sd[k], s[k] = math.Sqrt(math.Max(vars[k], 0)), math.Sqrt(s2[k])
	}
	npts, _ := d.zFine.Dims()
	for i := 0; i < npts; i++ {
		z := d.zFine.RawRowView(i)
		for _, sign := range [2]float64{1, -1} {
			for k := range f {
				f[k] = mean[k] + sign*sd[k]*z[k]
			}
			if err := op.Apply(nil, inflow, f, u, ws); err != nil {
				return err
			}
			clear(inMean)
			clear(inVar)
			for k, o := range obs {
				if !o.Censored || math.IsNaN(o.Y) {
					continue
				}
				em, ev := turnedAwayMoments(u[k]-f[k], inflow[k], s[k])
				cols, probs := op.T.Row(k)
				for j, col := range cols {
					p := probs[j]
					inMean[col] += p * em
					inVar[col] += p * p * ev
				}
			}
			for k, o := range obs {
				var h, t float64
				switch {
				case math.IsNaN(o.Y):
					continue
				case o.Censored:
					h, t = truncatedMoments(u[k]-inflow[k], f[k], s[k])
				default:
					h, t = o.Y-inMean[k], inVar[k]
				}
				if i == 0 && sign == 1 {
					c[k] = h
				}
				e[k] += h - c[k]
				e2[k] += (h - c[k]) * (h - c[k])
				tv[k] += t
			}
		}
	}
	w := 1 / float64(2*npts)
	for k, o := range obs {
		if math.IsNaN(o.Y) {
			dmean[k], dvar[k] = mean[k], vars[k]+s2[k]
			continue
		}
		m := e[k] * w
		dmean[k], dvar[k] = c[k]+m, math.Max(e2[k]*w-m*m, 0)+tv[k]*w
	}
	return nil
}

// turnedAwayMoments returns the mean and variance of the realised excess
// (ε − gap)⁺ of a censored product, ε ~ N(0, s²) given ε ≥ gap − inflow
// (the observation: its demand plus the inflow reached the supply), gap
// = u − f ≥ its threshold as inflow ≥ 0. With a = gap/s, b = (gap −
// inflow)/s and P = (1 − Φ(a))/(1 − Φ(b)) the chance that the product
// itself turned riders away: mean P·s(λ(a) − a), second moment
// P·s²(1 + a² − aλ(a)) (the truncated normal's partial moments above a).
func turnedAwayMoments(gap, inflow, s float64) (mean, variance float64) {
	a := gap / s
	lam, lmw := invMillsFast(a)
	p := 1.0
	if inflow > 0 {
		p = survivalRatio(a, a-inflow/s, lam)
	}
	m1 := s * lmw
	second := s * s * (math.Max(1-lam*lmw, 0) + lmw*lmw)
	mean = p * m1
	return mean, math.Max(p*second-mean*mean, 0)
}

// survivalRatio returns (1 − Φ(a))/(1 − Φ(b)) for b ≤ a, lamA = λ(a):
// φ(a)λ(b)/(φ(b)λ(a)) = e^(−(a−b)(a+b)/2)·λ(b)/λ(a), no logarithm; below
// −8 a survival is 1 to 1e-15.
func survivalRatio(a, b, lamA float64) float64 {
	switch {
	case a < -8:
		return 1
	case b < -8:
		return npdf(a) / lamA
	}
	lamB, _ := invMillsFast(b)
	return math.Min(math.Exp(-0.5*(a-b)*(a+b))*lamB/lamA, 1)
}

var (
	_ RealisedDemander = Factorised{}
	_ RealisedDemander = (*Gaussian)(nil)
	_ RealisedDemander = (*Tobit)(nil)
	_ RealisedDemander = (*Diffusion)(nil)
)
