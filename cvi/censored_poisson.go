package cvi

import (
	"math"

	"github.com/dcgpd/dcgpd/internal/mathx"
	"gonum.org/v1/gonum/mathext"
)

// CensoredPoisson is the count analogue of Tobit: y ~ Poisson(μ(f)) when
// the observation is not censored and, when it is, only Y ≥ u is known
// for the supply u:
//
//	log p = log P(Y ≥ u | μ) = log P(Y ≥ k | μ),  k = ⌈u⌉,
//
// which is 0 for u ≤ 0 (the reference's log(P(Y > y) + 1e-4) was off by
// one and floored). Derivatives in f are exact. It has no parameters.
type CensoredPoisson struct {
	link Link
	Quadrature
	noParams
}

// NewCensoredPoisson returns a censored Poisson likelihood with the given
// link.
func NewCensoredPoisson(link Link) (*CensoredPoisson, error) {
	if err := link.valid(); err != nil {
		return nil, err
	}
	return &CensoredPoisson{link: link}, nil
}

// Link returns the link function.
func (p *CensoredPoisson) Link() Link { return p.link }

// LogLik returns log p(y|f) and its first two derivatives in f.
func (p *CensoredPoisson) LogLik(o Obs, f float64) (l, dl, d2l float64) {
	if !o.Censored {
		return poissonLogLik(p.link, o.Y, f)
	}
	return poissonTail(p.link, o.Supply, f)
}

// poissonTail returns log P(Y ≥ ⌈u⌉ | μ(f)) and its derivatives in f.
// NaN or +Inf u give NaN.
func poissonTail(link Link, u, f float64) (l, dl, d2l float64) {
	if math.IsNaN(u) || math.IsInf(u, 1) {
		return math.NaN(), math.NaN(), math.NaN()
	}
	k := math.Ceil(u)
	if k <= 0 {
		return 0, 0, 0
	}
	mu, g, g1, g2 := link.eval(f)
	switch {
	case math.IsNaN(mu):
		return mu, mu, mu
	case math.IsInf(mu, 1):
		return 0, 0, 0
	}
	lgk, _ := math.Lgamma(k + 1)
	var dg, d2g float64
	if mu < 0.5*(k+1) {
		l, dg, d2g = tailSeries(k, mu, g, lgk)
		dl, d2l = chain(dg, d2g, g1, g2)
		return l, dl, d2l
	}
	if mu > k { // P ≈ 1: log1p of the small complement
		l = math.Log1p(-mathext.GammaIncRegComp(k, mu))
	} else {
		l = math.Log(mathext.GammaIncReg(k, mu))
	}
	if l < -600 { // too close to underflow for the ratio below
		l, dg, d2g = tailSeries(k, mu, g, lgk)
	} else {
		// dl/dg = μ·pmf(k−1; μ)/P = exp(−μ + k·g − lgamma(k) − log P).
		dg = math.Exp(-mu + k*g - (lgk - math.Log(k)) - l)
		d2g = dg * (k - mu - dg)
	}
	dl, d2l = chain(dg, d2g, g1, g2)
	return l, dl, d2l
}

// tailSeries returns log P(Y ≥ k | μ) with its first two derivatives in
// g = log μ from P = e^{−μ} μᵏ/k! · S, S = 1 + T, T = Σ_{j≥1} aⱼ,
// aⱼ = μʲ/((k+1)…(k+j)), which stays accurate where P underflows:
// dl/dg = k/S and d²l/dg² = −k·U/S² with U = Σ j·aⱼ (the form without the
// cancellation of k − μ − dl/dg). It converges geometrically for μ < k+1
// (ratio ≤ 1/2 where it is the first choice).
func tailSeries(k, mu, g, lgk float64) (l, dg, d2g float64) {
	var t, u float64
	a := 1.0
	for j := 1.0; j < 1e6; j++ {
		a *= mu / (k + j)
		t += a
		u += j * a
		if j*a <= 1e-17*u {
			break
		}
	}
	s := 1 + t
	l = -mu + k*g - lgk + math.Log1p(t)
	return l, k / s, -k * u / (s * s)
}

// tailFeature locates the censoring transition μ ≈ k in f and its
// half-width: about 1.5/√k in log μ.
func tailFeature(link Link, k float64) feature {
	h := 1.5 / math.Sqrt(k)
	if link == ExpLink {
		return feature{math.Log(k), h}
	}
	c := mathx.SoftplusInv(k)
	_, _, g1, _ := link.eval(c)
	return feature{c, h / g1}
}

// Expect returns E_{N(m,v)}[log p(y|f)], dE/dm and d²E/dm²: as Poisson
// when not censored, by quadrature when censored.
func (p *CensoredPoisson) Expect(o Obs, m, v float64) (e, dm, d2m float64) {
	if !o.Censored {
		return poissonExpect(&p.Quadrature, p.link, o.Y, m, v)
	}
	k := math.Ceil(o.Supply)
	if k <= 0 && !badVariance(v) {
		return 0, 0, 0
	}
	link, u := p.link, o.Supply
	return p.expect3(m, v, func(f float64) (float64, float64, float64) {
		return poissonTail(link, u, f)
	}, tailFeature(link, k), link.bends())
}

// LogPredictive returns log ∫ p(y|f) N(f|m,v) df by quadrature (for a
// censored observation, the predictive probability of Y ≥ u).
func (p *CensoredPoisson) LogPredictive(o Obs, m, v float64) float64 {
	if !o.Censored {
		return poissonLogPredictive(&p.Quadrature, p.link, o.Y, m, v)
	}
	k := math.Ceil(o.Supply)
	if k <= 0 && !badVariance(v) {
		return 0
	}
	link, u := p.link, o.Supply
	return p.logPredictive(m, v, func(f float64) (float64, float64, float64) {
		return poissonTail(link, u, f)
	}, tailFeature(link, k), link.bends())
}

// ExpectParamGrad returns E; the likelihood has no parameters.
func (p *CensoredPoisson) ExpectParamGrad(o Obs, m, v float64, _ []float64) float64 {
	e, _, _ := p.Expect(o, m, v)
	return e
}
