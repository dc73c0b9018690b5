package kernel

import "math"

// Go's math package has no modified Bessel functions, and the periodic
// kernel needs Ive_j(z) = I_j(z)·e^{−z} at z = ℓ⁻², which spans tiny z
// (long lengthscales) to huge z (short ones). Three routes cover that range
// with only sums of positive terms, so every branch keeps full relative
// accuracy instead of the absolute accuracy a quadrature would give:
//
//   - z ≤ 1: the power series, which converges in a handful of terms;
//   - 1 < z < iveAsymptoticZ(J): Miller's backward recurrence, normalised
//     by the identity e^{z} = I_0(z) + 2Σ_{n≥1} I_n(z);
//   - larger z: Hankel's asymptotic expansion, which there converges to
//     rounding in a few terms.

const (
	// iveSeriesMaxZ is where the power series hands over to the recurrence.
	iveSeriesMaxZ = 1.0
	// iveRescale keeps the unnormalised backward recurrence in range.
	iveRescale = 1e250
)

// iveAsymptoticZ returns the z above which the asymptotic expansion is
// used for orders up to maxOrder: there μ/(8z) ≤ 1/800 (μ = 4j²), so the
// series falls below rounding within a few terms, and the recurrence
// would need O(√z) steps.
func iveAsymptoticZ(maxOrder int) float64 {
	j := float64(maxOrder)
	return math.Max(1e4, 400*j*j)
}

// ive returns the exponentially scaled modified Bessel function of the
// first kind, I_j(z)·e^{−z}, for integer order j and z >= 0. It returns NaN
// for negative or NaN z and 0 for z = +Inf (the limit).
func ive(j int, z float64) float64 {
	if j < 0 {
		j = -j // I_{−j} = I_j for integer j
	}
	dst := make([]float64, j+1)
	iveSeq(dst, z)
	return dst[j]
}

// iveSeq writes Ive_j(z) for j = 0, …, len(dst)−1 into dst, with the same
// conventions as ive.
func iveSeq(dst []float64, z float64) {
	if len(dst) == 0 {
		return
	}
	var fill func(j int) float64
	switch {
	case math.IsNaN(z) || z < 0:
		fill = func(int) float64 { return math.NaN() }
	case math.IsInf(z, 1):
		fill = func(int) float64 { return 0 }
	case z == 0:
		fill = func(j int) float64 {
			if j == 0 {
				return 1
			}
			return 0
		}
	case z <= iveSeriesMaxZ:
		fill = func(j int) float64 { return iveSeries(j, z) }
	case z >= iveAsymptoticZ(len(dst)-1):
		fill = func(j int) float64 { return iveAsymptotic(j, z) }
	default:
		iveMiller(dst, z)
		return
	}
	for j := range dst {
		dst[j] = fill(j)
	}
}

// iveSeries sums e^{−z}(z/2)^j Σ_k (z²/4)^k / (k!(j+k)!), all terms
// positive. Intended for 0 < z ≤ 1, where it converges within ~12 terms.
func iveSeries(j int, z float64) float64 {
	h := z / 2
	// (z/2)^j / j! as a running product: no overflow, graceful underflow.
	lead := 1.0
	for i := 1; i <= j; i++ {
		lead *= h / float64(i)
	}
	h2 := h * h
	term, sum := 1.0, 1.0
	for k := 1; k < 200; k++ {
		term *= h2 / (float64(k) * float64(j+k))
		sum += term
		if term < 1e-17*sum {
			break
		}
	}
	return math.Exp(-z) * lead * sum
}

// iveAsymptotic sums Hankel's expansion
// Ive_j(z) ~ (2πz)^{−1/2} Σ_k (−1)^k Π_{i≤k}(μ − (2i−1)²) / (k! (8z)^k),
// μ = 4j². The neglected e^{−2z} part is far below rounding for the z it is
// used at (iveAsymptoticZ).
func iveAsymptotic(j int, z float64) float64 {
	mu := 4 * float64(j) * float64(j)
	term, sum := 1.0, 1.0
	for k := 1; k < 60; k++ {
		odd := float64(2*k - 1)
		next := -term * (mu - odd*odd) / (8 * float64(k) * z)
		if math.Abs(next) >= math.Abs(term) {
			break // past the smallest term of the divergent tail
		}
		term = next
		sum += term
		if math.Abs(term) < 1e-17*math.Abs(sum) {
			break
		}
	}
	return sum / math.Sqrt(2*math.Pi*z)
}

// iveMiller runs the backward recurrence y_{n−1} = y_{n+1} + (2n/z)·y_n from
// a start index N far above len(dst)−1, where I_n is negligible. I_n is
// the solution that grows as n decreases, so the recurrence is stable and
// adds only positive terms; the normalisation Ive_0 + 2Σ Ive_n = 1 fixes the
// scale. The start error is about exp(−(N² − j²)/z) for large z and far
// smaller for small z, so N = J + 16 + ⌈√(90z)⌉ puts it below 1e-17 and
// also captures the normalisation sum to that accuracy. Intended for z > 1
// (for tiny z the per-step growth 2n/z would overflow).
func iveMiller(dst []float64, z float64) {
	maxOrder := len(dst) - 1
	start := maxOrder + 16 + int(math.Ceil(math.Sqrt(90*z)))
	var next, cur, norm float64 = 0, 1, 0 // y_{n+1}, y_n, running normaliser
	for n := start; n >= 1; n-- {
		if n <= maxOrder {
			dst[n] = cur
		}
		norm += 2 * cur
		prev := next + 2*float64(n)/z*cur
		next, cur = cur, prev
		if cur > iveRescale {
			next /= iveRescale
			cur /= iveRescale
			norm /= iveRescale
			for k := n; k <= maxOrder; k++ {
				dst[k] /= iveRescale
			}
		}
	}
	dst[0] = cur
	norm += cur
	for k := range dst {
		dst[k] /= norm
	}
}
