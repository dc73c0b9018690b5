package cvi

import "math"

// poissonLogLik returns log Poisson(y | μ(f)) and its derivatives in f.
// A y that is not a non-negative integer is accepted as a quasi-likelihood
// (lgamma(y+1) normalises); y < 0 gives NaN.
func poissonLogLik(link Link, y, f float64) (l, dl, d2l float64) {
	if y < 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	mu, g, g1, g2 := link.eval(f)
	lg, _ := math.Lgamma(y + 1)
	l = -mu - lg
	if y != 0 { // 0·log 0 = 0
		l += y * g
	}
	dl, d2l = chain(y-mu, -mu, g1, g2)
	return l, dl, d2l
}

// Poisson is the count likelihood y ~ Poisson(μ(f)) with an exp or
// softplus link. It ignores Obs.Censored and Obs.Supply (see
// CensoredPoisson). With the exp link the expectations are closed forms
// (E[eᶠ] = e^{m+v/2}); with the softplus link they use the embedded
// Quadrature. It has no parameters.
type Poisson struct {
	link Link
	Quadrature
	noParams
}

// NewPoisson returns a Poisson likelihood with the given link.
func NewPoisson(link Link) (*Poisson, error) {
	if err := link.valid(); err != nil {
		return nil, err
	}
	return &Poisson{link: link}, nil
}

// Link returns the link function.
func (p *Poisson) Link() Link { return p.link }

// LogLik returns log Poisson(y|μ(f)) and its first two derivatives in f.
func (p *Poisson) LogLik(o Obs, f float64) (l, dl, d2l float64) {
	return poissonLogLik(p.link, o.Y, f)
}

// Expect returns E_{N(m,v)}[log p(y|f)], dE/dm and d²E/dm².
func (p *Poisson) Expect(o Obs, m, v float64) (e, dm, d2m float64) {
	return poissonExpect(&p.Quadrature, p.link, o.Y, m, v)
}

// poissonExpect is Expect of the uncensored Poisson term: closed form for
// the exp link, quadrature for the softplus link.
func poissonExpect(q *Quadrature, link Link, y, m, v float64) (e, dm, d2m float64) {
	if link == ExpLink {
		if y < 0 || badVariance(v) {
			return math.NaN(), math.NaN(), math.NaN()
		}
		mu := math.Exp(m + 0.5*v)
		lg, _ := math.Lgamma(y + 1)
		e = -mu - lg
		if y != 0 {
			e += y * m
		}
		return e, y - mu, -mu
	}
	return q.expect3(m, v, func(f float64) (float64, float64, float64) {
		return poissonLogLik(link, y, f)
	}, softplusBend)
}

// LogPredictive returns log ∫ Poisson(y|μ(f)) N(f|m,v) df by quadrature.
func (p *Poisson) LogPredictive(o Obs, m, v float64) float64 {
	return poissonLogPredictive(&p.Quadrature, p.link, o.Y, m, v)
}

// poissonLogPredictive is LogPredictive of the uncensored Poisson term.
func poissonLogPredictive(q *Quadrature, link Link, y, m, v float64) float64 {
	return q.logPredictive(m, v, func(f float64) (float64, float64, float64) {
		return poissonLogLik(link, y, f)
	}, link.bends())
}

// ExpectParamGrad returns E; the Poisson likelihood has no parameters.
func (p *Poisson) ExpectParamGrad(o Obs, m, v float64, _ []float64) float64 {
	e, _, _ := p.Expect(o, m, v)
	return e
}
