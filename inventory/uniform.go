package inventory

import "math"

// maxSubstepMean bounds Λτ in one uniformisation step: e^{−200} ≈ 1e−87
// keeps the first Poisson weight far from underflow. A bin whose
// Λ = λ + μ is larger is cut into equal sub-steps (exact: the chain is
// homogeneous within a bin).
const maxSubstepMean = 200

// poissonWeights fills w[n] = P(N = n) and c[n] = τ/(Λτ) · P(N > n) for
// N ~ Poisson(lt), lt = Λτ, n = 0..len−1, stopping at the first n whose
// tail P(N > n) is below tol. c[n] is ∫₀^τ P(N_t = n) dt for the Poisson
// process of rate Λ, so Σ_n c[n] pPⁿ is ∫₀^τ p(t) dt. It returns the
// grown slices.
func poissonWeights(lt, tau, tol float64, w, c []float64) ([]float64, []float64) {
	w, c = w[:0], c[:0]
	p := math.Exp(-lt)
	tail := 1 - p
	scale := tau / lt
	// Stop once the tail is below tol, or (rounding) when the weights
	// have passed the mode and fallen below tol·1e-4 themselves.
	for n := 0; ; n++ {
		w = append(w, p)
		c = append(c, scale*math.Max(tail, 0))
		if tail < tol || (float64(n) > lt && p < tol*1e-4) {
			return w, c
		}
		p *= lt / float64(n+1)
		tail -= p
	}
}

// stepForward adds wn·q to acc and writes y = qP for the chain
// uniformised at rate Λ = λ + μ: from an inner state the chain moves
// down with probability a = λ/Λ and up with b = μ/Λ; at 0 it stays with
// a, at C with b. abs0 and absC make 0 or C absorbing. len(q) = len(y) =
// len(acc) = C+1.
func stepForward(y, q, acc []float64, wn, a, b float64, abs0, absC bool) {
	c := len(q) - 1
	acc = acc[:len(q)]
	for x, qx := range q {
		acc[x] += wn * qx
	}
	if c == 0 {
		y[0] = q[0]
		return
	}
	// Inner states: y[x] = b·q[x−1] + a·q[x+1], written over shifted
	// slices of one length so the loop has no bounds checks.
	lo, hi, mid := q[:c-1], q[2:], y[1:c]
	hi = hi[:len(lo)]
	mid = mid[:len(lo)]
	for i := range lo {
		mid[i] = b*lo[i] + a*hi[i]
	}
	stay0, stayC := a, b
	if abs0 {
		stay0 = 1
	}
	if absC {
		stayC = 1
	}
	y[0] = stay0*q[0] + a*q[1]
	y[c] = stayC*q[c] + b*q[c-1]
	if abs0 {
		y[1] -= b * q[0] // 0 does not move up
	}
	if absC {
		y[c-1] -= a * q[c] // C does not move down
	}
}

// stepBackward writes y = Pv + wn·u for the reflecting chain of
// stepForward.
func stepBackward(y, v, u []float64, wn, a, b float64) {
	c := len(v) - 1
	u = u[:len(v)]
	if c == 0 {
		y[0] = v[0] + wn*u[0]
		return
	}
	lo, hi, mid, um := v[:c-1], v[2:], y[1:c], u[1:c]
	hi, mid, um = hi[:len(lo)], mid[:len(lo)], um[:len(lo)]
	for i := range lo {
		mid[i] = a*lo[i] + b*hi[i] + wn*um[i]
	}
	y[0] = a*v[0] + b*v[1] + wn*u[0]
	y[c] = a*v[c-1] + b*v[c] + wn*u[c]
}
