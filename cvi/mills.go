package cvi

import "math"

// Polynomials for the Mills ratio M(t) = (1 − Φ(t))/φ(t) = 1/λ(t) on
// [0, millsMax], one per interval of width millsH in the interval's
// scaled variable x ∈ [−1, 1]: Chebyshev interpolants of degree
// millsDeg−1 at start-up from InvMills, kept in the monomial basis for
// Horner's rule. M is entire (a scaled erfcx), so they reproduce it to a
// few ulp (tested).
const (
	millsH   = 0.5
	millsMax = 8
	millsN   = int(millsMax / millsH)
	millsDeg = 12
)

var millsCoef = millsTable()

func millsTable() *[millsN][millsDeg]float64 {
	var out [millsN][millsDeg]float64
	chebPieces(out[:], millsH, func(t float64) float64 { return 1 / InvMills(t) })
	return &out
}

// chebPieces fills dst[i] with the monomial coefficients, in the scaled
// variable x ∈ [−1, 1] of the interval [i·h, (i+1)·h], of the Chebyshev
// interpolant of degree millsDeg−1 of fn on that interval.
func chebPieces(dst [][millsDeg]float64, h float64, fn func(float64) float64) {
	var f, c [millsDeg]float64
	// T_k(x) in the monomial basis, by T_{k+1} = 2x·T_k − T_{k−1}.
	var tk [millsDeg][millsDeg]float64
	tk[0][0] = 1
	tk[1][1] = 1
	for k := 2; k < millsDeg; k++ {
		for j := 0; j < millsDeg; j++ {
			if j > 0 {
				tk[k][j] = 2 * tk[k-1][j-1]
			}
			tk[k][j] -= tk[k-2][j]
		}
	}
	for i := range dst {
		mid := (float64(i) + 0.5) * h
		// Values at the Chebyshev nodes, then their discrete cosine
		// transform: the Chebyshev coefficients.
		for j := range f {
			x := math.Cos(math.Pi * (float64(j) + 0.5) / millsDeg)
			f[j] = fn(mid + 0.5*h*x)
		}
		for k := range c {
			var s float64
			for j, v := range f {
				s += v * math.Cos(math.Pi*float64(k)*(float64(j)+0.5)/millsDeg)
			}
			c[k] = 2 * s / millsDeg
		}
		c[0] /= 2
		// Highest terms first: the small ones are summed before the large.
		for k := millsDeg - 1; k >= 0; k-- {
			for j := 0; j <= k; j++ {
				dst[i][j] += c[k] * tk[k][j]
			}
		}
	}
}

// mills returns M(t) for 0 ≤ t < millsMax by Estrin's scheme (pairs,
// then pairs of pairs: a third of Horner's chain of dependent
// operations), unrolled for millsDeg = 12 (the array index below fails to
// compile otherwise).
func mills(t float64) float64 {
	_ = [1]int{}[millsDeg-12]
	i := int(t * (1 / millsH))
	c := &millsCoef[i]
	x := (t - (float64(i)+0.5)*millsH) * (2 / millsH)
	x2 := x * x
	x4 := x2 * x2
	q0 := (c[0] + c[1]*x) + (c[2]+c[3]*x)*x2
	q1 := (c[4] + c[5]*x) + (c[6]+c[7]*x)*x2
	q2 := (c[8] + c[9]*x) + (c[10]+c[11]*x)*x2
	return q0 + (q1+q2*x4)*x4
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
		return -(0.5*z)*z - logSqrt2Pi + logMills(z), lam, lam - z
	}
	// Φ(z) = φ(z)·M(−z) ≤ ½; −z²/2 is split as in npdf to one exp: its
	// rounding error e enters as exp(h + e) ≈ exp(h)·(1 + e).
	h := -0.5 * z * z
	e := math.FMA(-0.5*z, z, -h)
	phi := invSqrt2Pi * expNeg(h) * (1 + e)
	p := phi * mills(-z)
	lam = phi / (1 - p)
	return log1m(p), lam, lam - z
}

// expNeg returns e^x for −700 < x ≤ 0 to a few ulp (tested), in about half
// the time of math.Exp: x = (k + j/64)·ln 2 + r with |r| ≤ ln 2/128, e^r by
// its Taylor polynomial of degree 5 (truncation below 4e-17), 2^(j/64)
// from a table and 2^k into the exponent.
func expNeg(x float64) float64 {
	const (
		n      = 64
		ln2Hi  = 6.93147180369123816490e-01 / n // ln 2/64 to 32 bits: k·ln2Hi is exact
		ln2Lo  = 1.90821492927058770002e-10 / n
		invLn2 = n / math.Ln2
	)
	kf := math.Floor(x*invLn2 + 0.5)
	k := int64(kf)
	r := (x - kf*ln2Hi) - kf*ln2Lo
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120)))))
	j := k & (n - 1)
	return exp2Table[j] * p * math.Float64frombits(uint64((k-j)/n+1023)<<52)
}

// exp2Table holds 2^(j/64), j = 0, …, 63.
var exp2Table = func() (t [64]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 64)
	}
	return t
}()
