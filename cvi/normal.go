package cvi

import "math"

const (
	invSqrt2Hi    = 0.7071067811865476     // fl(1/√2)
	invSqrt2Lo    = -4.833646656726457e-17 // 1/√2 − invSqrt2Hi
	twoOverSqrtPi = 1.1283791670955126     // 2/√π
	logSqrt2Pi    = 0.9189385332046728     // log √(2π)
	invSqrt2Pi    = 0.3989422804014327     // 1/√(2π)

	// tailZ is where the continued fraction takes over from math.Erfc. It
	// needs at most 28 terms beyond it, and below it the cancellation in
	// λ(z) − z costs at most ~z² ulp.
	tailZ = 5
)

// LogSurvival returns log(1 − Φ(z)) for the standard normal CDF Φ, with a
// relative error of a few ulp for every z (it is −z²/2 − log z − log √(2π)
// + o(1) far in the upper tail, where 1 − Φ underflows, and −Φ(z) far in
// the lower tail). LogSurvival(NaN) is NaN.
func LogSurvival(z float64) float64 {
	l, _, _ := survival(z)
	return l
}

// LogCDF returns log Φ(z) = LogSurvival(−z).
func LogCDF(z float64) float64 { return LogSurvival(-z) }

// InvMills returns the inverse Mills ratio λ(z) = φ(z)/(1 − Φ(z)), the
// hazard of the standard normal and the derivative of −LogSurvival. It is
// accurate to a few ulp for all z: λ(z) → 0 as z → −∞ and λ(z) ≈ z + 1/z
// as z → +∞.
func InvMills(z float64) float64 {
	_, lam, _ := survival(z)
	return lam
}

// survival returns log(1 − Φ(z)), λ(z) and λ(z) − z. The last is needed
// for the curvature −λ(λ − z) of the log-survival and is computed without
// the cancellation of forming λ first where that matters (large z).
func survival(z float64) (logQ, lam, lamMinusZ float64) {
	switch {
	case math.IsNaN(z):
		return z, z, z
	case math.IsInf(z, 1):
		return math.Inf(-1), z, 0
	case math.IsInf(z, -1):
		return 0, 0, z
	case z > tailZ:
		lam, r := millsCF(z)
		// log Q = log φ(z) − log λ(z); (0.5·z)·z does not overflow before
		// the true value does.
		return -(0.5*z)*z - logSqrt2Pi - math.Log(lam), lam, r
	case z < -tailZ:
		phi := npdf(z)
		lamNeg, _ := millsCF(-z)
		p := phi / lamNeg // Φ(z) = φ(z)·M(−z), M = 1/λ
		lam = phi / (1 - p)
		return math.Log1p(-p), lam, lam - z
	}
	// Moderate z: erfc, with the rounding of z/√2 corrected to first
	// order, which would otherwise cost ~z² ulp.
	x := z * invSqrt2Hi
	delta := math.FMA(z, invSqrt2Hi, -x) + z*invSqrt2Lo
	xx := x * x
	ex := math.Exp(-xx)
	corr := twoOverSqrtPi * ex * delta
	var q float64
	if z >= 0 {
		q = 0.5 * (math.Erfc(x) - corr)
		logQ = math.Log(q)
	} else {
		p := 0.5 * (math.Erfc(-x) + corr) // Φ(z) < 1/2, accurate
		q = 1 - p
		logQ = math.Log1p(-p)
	}
	// φ(z) from the same exponential: z²/2 = (x + δ)² = xx + ρ + 2xδ + δ²
	// with ρ the rounding of x·x, so φ = e^{−xx}·(1 − ρ − 2xδ) to O(z⁴ ulp²).
	rho := math.FMA(x, x, -xx)
	phi := invSqrt2Pi * ex * (1 - rho - 2*x*delta)
	lam = phi / q
	return logQ, lam, lam - z
}

// millsCF returns λ(z) and λ(z) − z for z ≥ tailZ from Laplace's continued
// fraction λ(z) = z + 1/(z + 2/(z + 3/(z + …))), evaluated backwards with a
// number of terms that gives full double precision (checked against
// 40-digit arithmetic for z ≥ 1.5: 8 + 500/z² terms suffice).
func millsCF(z float64) (lam, r float64) {
	n := 8 + int(500/(z*z)) // z*z = +Inf gives 8
	t := z
	for k := n; k >= 2; k-- {
		t = z + float64(k)/t
	}
	r = 1 / t
	return z + r, r
}

// npdf returns the standard normal density φ(z) to a few ulp. The exponent
// −z²/2 is split so that its rounding error (~z² ulp) does not reach the
// result.
func npdf(z float64) float64 {
	if math.IsInf(z, 0) {
		return 0
	}
	hi := math.Float64frombits(math.Float64bits(z) &^ (1<<27 - 1)) // 26 bits: hi² is exact
	lo := z - hi
	return invSqrt2Pi * math.Exp(-0.5*hi*hi) * math.Exp(-lo*0.5*(z+hi))
}
