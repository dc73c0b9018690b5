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
// Expectations of the censored term use the embedded Quadrature.
type Tobit struct {
	noise
	Quadrature
}

// NewTobit returns a Tobit likelihood with noise variance σ² > 0.
func NewTobit(variance float64) (*Tobit, error) {
	if err := checkVariance(variance); err != nil {
		return nil, err
	}
	return &Tobit{noise: noise{variance}}, nil
}

// LogLik returns log p(y|f) and its first two derivatives in f.
func (t *Tobit) LogLik(o Obs, f float64) (l, dl, d2l float64) {
	if !o.Censored {
		return gaussLogLik(o.Y, f, t.variance)
	}
	return tobitCensored(o.Supply, f, t.variance)
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
	if !o.Censored {
		return gaussExpect(o.Y, m, v, t.variance)
	}
	u, s2 := o.Supply, t.variance
	return t.expect3(m, v, func(f float64) (float64, float64, float64) {
		return tobitCensored(u, f, s2)
	}, t.transition(u))
}

// transition is the censoring transition at f = u: log Φ((f−u)/σ) is
// analytic within ~2.8σ of the real axis.
func (t *Tobit) transition(u float64) feature { return feature{u, 2 * math.Sqrt(t.variance)} }

// LogPredictive returns log N(y|m, v+σ²) when not censored and
// log P(y* ≥ u) = LogSurvival((u − m)/√(v+σ²)) when censored, both exact.
func (t *Tobit) LogPredictive(o Obs, m, v float64) float64 {
	if badVariance(v) {
		return math.NaN()
	}
	if !o.Censored {
		return gaussLogPdf(o.Y, m, v+t.variance)
	}
	return LogSurvival((o.Supply - m) / math.Sqrt(v+t.variance))
}

// ExpectParamGrad adds dE/dθ for θ = softplus⁻¹(σ²) into grad[0] and
// returns E. For the censored term dl/dσ² = λ(w)·w/(2σ²).
func (t *Tobit) ExpectParamGrad(o Obs, m, v float64, grad []float64) float64 {
	if !o.Censored {
		e, _, _ := gaussExpect(o.Y, m, v, t.variance)
		grad[0] += gaussExpectDVar(o.Y, m, v, t.variance) * softplusSlope(t.variance)
		return e
	}
	u, s2 := o.Supply, t.variance
	s := math.Sqrt(s2)
	e, dvar, _ := t.expect3(m, v, func(f float64) (float64, float64, float64) {
		w := (u - f) / s
		l, lam, _ := survival(w)
		return l, lam * w / (2 * s2), 0
	}, t.transition(u))
	grad[0] += dvar * softplusSlope(s2)
	return e
}
