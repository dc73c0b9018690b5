package cvi

import "math"

// Chebyshev expansions of the Mills ratio M(t) = (1 − Φ(t))/φ(t) = 1/λ(t)
// on [0, millsMax], one per interval of width millsH, interpolated at
// start-up from InvMills. M is entire (a scaled erfcx), so degree
// millsDeg−1 on these intervals reproduces it to a few ulp (tested).
const (
	millsH   = 0.5
	millsMax = 8
	millsN   = int(millsMax / millsH)
	millsDeg = 12
)

var millsCoef = millsTable()

func millsTable() *[millsN][millsDeg]float64 {
	var c [millsN][millsDeg]float64
	var f [millsDeg]float64
	for i := range c {
		mid := (float64(i) + 0.5) * millsH
		// Values at the Chebyshev nodes, then their discrete cosine
		// transform.
		for j := range f {
			x := math.Cos(math.Pi * (float64(j) + 0.5) / millsDeg)
			f[j] = 1 / InvMills(mid+0.5*millsH*x)
		}
		for k := range c[i] {
			var s float64
			for j, v := range f {
				s += v * math.Cos(math.Pi*float64(k)*(float64(j)+0.5)/millsDeg)
			}
			c[i][k] = 2 * s / millsDeg
		}
		c[i][0] /= 2
	}
	return &c
}

// mills returns M(t) for 0 ≤ t < millsMax by Clenshaw's recurrence.
func mills(t float64) float64 {
	i := int(t * (1 / millsH))
	c := &millsCoef[i]
	x := (t - (float64(i)+0.5)*millsH) * (2 / millsH)
	x2 := 2 * x
	var b1, b2 float64
	for k := millsDeg - 1; k >= 1; k-- {
		b1, b2 = x2*b1-b2+c[k], b1
	}
	return x*b1 - b2 + c[0]
}

// survivalFast is survival(z) for the quasi-Monte Carlo rules' inner
// loops: log(1 − Φ(z)), λ(z) and λ(z) − z from one Mills ratio and one exp
// or log where survival takes up to three exps, an erfc and a continued
// fraction, to a relative error below 1e-13 (tested against survival;
// far below the rules' own error). Outside |z| < millsMax it is survival.
func survivalFast(z float64) (logQ, lam, lamMinusZ float64) {
	if !(z > -millsMax && z < millsMax) {
		return survival(z)
	}
	if z >= 0 {
		m := mills(z)
		lam = 1 / m
		return -(0.5*z)*z - logSqrt2Pi + math.Log(m), lam, lam - z
	}
	// Φ(z) = φ(z)·M(−z) ≤ ½; −z²/2 is split as in npdf to one exp: its
	// rounding error e enters as exp(h + e) ≈ exp(h)·(1 + e).
	h := -0.5 * z * z
	e := math.FMA(-0.5*z, z, -h)
	phi := invSqrt2Pi * math.Exp(h) * (1 + e)
	p := phi * mills(-z)
	lam = phi / (1 - p)
	return math.Log1p(-p), lam, lam - z
}
