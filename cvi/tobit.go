package cvi

import (
	"math"
)

// Tobit is the right-censored Gaussian likelihood of the CGP model: the
// demand y* ~ N(f, σ²) is observed when the observation is not censored,
// and otherwise only y* ≥ u is known for the supply u:
//
//	log p = log N(y | f, σ²)                 if !Censored,
//	log p = log Φ((f − u)/σ) = LogSurvival((u − f)/σ)   if Censored,
//
// exactly (no epsilon floor), with exact derivatives through InvMills.
// Expectations of the censored term use the embedded Quadrature. With
// level noise (SetLevelNoise) σ² is σ²ᵢ = σ² + c·max(Levelᵢ, 0) per
// observation.
type Tobit struct {
	noise
	Quadrature
}

// NewTobit returns a Tobit likelihood with noise variance σ² > 0.
func NewTobit(variance float64) (*Tobit, error) {
	if err := checkVariance(variance); err != nil {
		return nil, err
	}
	return &Tobit{noise: noise{variance: variance}}, nil
}

// LogLik returns log p(y|f) and its first two derivatives in f.
func (t *Tobit) LogLik(o Obs, f float64) (l, dl, d2l float64) {
	s2 := t.at(o)
	if !o.Censored {
		return gaussLogLik(o.Y, f, s2)
	}
	return tobitCensored(o.Supply, f, s2)
}

// tobitCensored returns log Φ((f−u)/σ) and its derivatives in f:
// λ(w)/σ and −λ(w)(λ(w) − w)/σ² at w = (u − f)/σ.
func tobitCensored(u, f, s2 float64) (l, dl, d2l float64) {
	s := math.Sqrt(s2)
	w := (u - f) / s
	l, lam, lmw := survival(w)
	return l, lam / s, -lam * lmw / s2
}

// Expect returns E_{N(m,v)}[log p(y|f)], dE/dm and d²E/dm²: closed forms
// when not censored, quadrature when censored.
func (t *Tobit) Expect(o Obs, m, v float64) (e, dm, d2m float64) {
	s2 := t.at(o)
	if !o.Censored {
		return gaussExpect(o.Y, m, v, s2)
	}
	u := o.Supply
	return t.expect3(m, v, func(f float64) (float64, float64, float64) {
		return tobitCensored(u, f, s2)
	}, transition(u, s2))
}

// transition is the censoring transition at f = u for noise variance s2:
// log Φ((f−u)/σ) is analytic within ~2.8σ of the real axis.
func transition(u, s2 float64) feature { return feature{u, 2 * math.Sqrt(s2)} }

// LogPredictive returns log N(y|m, v+σ²) when not censored and
// log P(y* ≥ u) = LogSurvival((u − m)/√(v+σ²)) when censored, both exact.
func (t *Tobit) LogPredictive(o Obs, m, v float64) float64 {
	if badVariance(v) {
		return math.NaN()
	}
	s2 := t.at(o)
	if !o.Censored {
		return gaussLogPdf(o.Y, m, v+s2)
	}
	return LogSurvival((o.Supply - m) / math.Sqrt(v+s2))
}

// ExpectParamGrad adds dE/dθ for θ = softplus⁻¹(σ²) into grad[0] (and
// for softplus⁻¹(c) into grad[1] with level noise) and returns E. For the
// censored term dl/dσ² = λ(w)·w/(2σ²).
func (t *Tobit) ExpectParamGrad(o Obs, m, v float64, grad []float64) float64 {
	s2 := t.at(o)
	if !o.Censored {
		e, _, _ := gaussExpect(o.Y, m, v, s2)
		t.addParamGrad(grad, o.Level, gaussExpectDVar(o.Y, m, v, s2))
		return e
	}
	u := o.Supply
	s := math.Sqrt(s2)
	e, dvar, _ := t.expect3(m, v, func(f float64) (float64, float64, float64) {
		w := (u - f) / s
		l, lam, _ := survival(w)
		return l, lam * w / (2 * s2), 0
	}, transition(u, s2))
	t.addParamGrad(grad, o.Level, dvar)
	return e
}
