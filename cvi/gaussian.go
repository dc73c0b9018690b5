package cvi

import (
	"math"
)

// Gaussian is the likelihood y ~ N(f, σ²) with noise variance σ² (the
// NCGP model), or σ²ᵢ = σ² + c·max(Levelᵢ, 0) with level noise
// (SetLevelNoise). It ignores Obs.Censored and Obs.Supply: censored sales
// are treated as if they were the demand. All expectations are closed forms.
type Gaussian struct {
	noise
}

// NewGaussian returns a Gaussian likelihood with noise variance σ² > 0.
func NewGaussian(variance float64) (*Gaussian, error) {
	if err := checkVariance(variance); err != nil {
		return nil, err
	}
	return &Gaussian{noise{variance: variance}}, nil
}

// LogLik returns log N(y|f, σ²), (y−f)/σ² and −1/σ².
func (g *Gaussian) LogLik(o Obs, f float64) (l, dl, d2l float64) {
	return gaussLogLik(o.Y, f, g.at(o))
}

// Expect returns −½log(2πσ²) − ((y−m)² + v)/(2σ²), (y−m)/σ² and −1/σ².
func (g *Gaussian) Expect(o Obs, m, v float64) (e, dm, d2m float64) {
	return gaussExpect(o.Y, m, v, g.at(o))
}

// LogPredictive returns log N(y|m, v+σ²).
func (g *Gaussian) LogPredictive(o Obs, m, v float64) float64 {
	if badVariance(v) {
		return math.NaN()
	}
	return gaussLogPdf(o.Y, m, v+g.at(o))
}

// ExpectParamGrad adds dE/dθ for θ = softplus⁻¹(σ²) into grad[0] (and
// for softplus⁻¹(c) into grad[1] with level noise) and returns E.
func (g *Gaussian) ExpectParamGrad(o Obs, m, v float64, grad []float64) float64 {
	s2 := g.at(o)
	e, _, _ := gaussExpect(o.Y, m, v, s2)
	g.addParamGrad(grad, o.Level, gaussExpectDVar(o.Y, m, v, s2))
	return e
}

// gaussLogPdf returns log N(y|mean, variance).
func gaussLogPdf(y, mean, variance float64) float64 {
	r := y - mean
	return -0.5*math.Log(2*math.Pi*variance) - 0.5*r*r/variance
}

// gaussLogLik is the Gaussian log-density of y with derivatives in f.
func gaussLogLik(y, f, s2 float64) (l, dl, d2l float64) {
	return gaussLogPdf(y, f, s2), (y - f) / s2, -1 / s2
}

// gaussExpect is E_{N(m,v)} of gaussLogLik, in closed form.
func gaussExpect(y, m, v, s2 float64) (e, dm, d2m float64) {
	if badVariance(v) {
		return math.NaN(), math.NaN(), math.NaN()
	}
	r := y - m
	return -0.5*math.Log(2*math.Pi*s2) - 0.5*(r*r+v)/s2, r / s2, -1 / s2
}

// gaussExpectDVar is dE/dσ² of gaussExpect.
func gaussExpectDVar(y, m, v, s2 float64) float64 {
	r := y - m
	return 0.5 * ((r*r+v)/s2 - 1) / s2
}
