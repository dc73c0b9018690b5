package cvi

import "math"

// log(1 − p) for 0 ≤ p ≤ ½ without a logarithm: r(p) = −log(1 − p)/p is
// analytic on the disc |p| < 1 and between 1 and 1.39 on [0, ½], so its
// Chebyshev interpolants of degree millsDeg−1 on log1mN intervals of
// width log1mH (the nearest singularity, p = 1, at least 17 half-widths
// away) reproduce it to a few ulp (measured 1.3e-15), and log(1 − p) = −p·r(p) keeps that
// relative accuracy for every p, however small. The censored terms of the
// quasi-Monte Carlo rules (survivalFast, z < 0) spent most of their time
// in math.Log1p.
const (
	log1mH = 1.0 / 16
	log1mN = 8
)

var log1mCoef = func() *[log1mN][millsDeg]float64 {
	var out [log1mN][millsDeg]float64
	chebPieces(out[:], log1mH, func(p float64) float64 { return -math.Log1p(-p) / p })
	return &out
}()

// log1m returns log(1 − p) for 0 ≤ p ≤ ½ (tested to 1e-14 relative
// against math.Log1p) by Estrin's scheme, as mills.
func log1m(p float64) float64 {
	i := min(int(p*(1/log1mH)), log1mN-1)
	c := &log1mCoef[i]
	x := (p - (float64(i)+0.5)*log1mH) * (2 / log1mH)
	// estrin12 written out: the compiler does not inline it here.
	x2 := x * x
	x4 := x2 * x2
	q0 := (c[0] + c[1]*x) + (c[2]+c[3]*x)*x2
	q1 := (c[4] + c[5]*x) + (c[6]+c[7]*x)*x2
	q2 := (c[8] + c[9]*x) + (c[10]+c[11]*x)*x2
	return -p * (q0 + (q1+q2*x4)*x4)
}

// estrin12 evaluates the polynomial of coefficients c (lowest first) at x
// by Estrin's scheme, as mills does.
func estrin12(c *[millsDeg]float64, x float64) float64 {
	x2 := x * x
	x4 := x2 * x2
	q0 := (c[0] + c[1]*x) + (c[2]+c[3]*x)*x2
	q1 := (c[4] + c[5]*x) + (c[6]+c[7]*x)*x2
	q2 := (c[8] + c[9]*x) + (c[10]+c[11]*x)*x2
	return q0 + (q1+q2*x4)*x4
}

// logMillsCoef holds log M on the Mills table's intervals: log M is
// analytic and of magnitude at most log millsMax + 1 there, so its
// interpolants reproduce it to a few ulp of that size (tested), which
// is what survivalFast needs for log Q = −z²/2 − log√(2π) + log M(z),
// |log Q| ≥ log 2 for z ≥ 0.
var logMillsCoef = func() *[millsN][millsDeg]float64 {
	var out [millsN][millsDeg]float64
	chebPieces(out[:], millsH, func(t float64) float64 { return -math.Log(InvMills(t)) })
	return &out
}()

// logMills returns log M(t) for 0 ≤ t < millsMax.
func logMills(t float64) float64 {
	i := int(t * (1 / millsH))
	x := (t - (float64(i)+0.5)*millsH) * (2 / millsH)
	return estrin12(&logMillsCoef[i], x)
}
