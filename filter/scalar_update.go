package filter

import "math"

// updateScalar is scalarObs followed by updateDense for one scalar chain
// and its product's site (λ₁, λ₂), in one pass over the state and with the
// same arithmetic: with c = √λ₂·H (non-zeros hv at hj), z = λ₁/√λ₂,
// ut = c·pp, s = ut·cᵀ + 1, mf = mp + utᵀ·v/s and pf = pp − utᵀ·ut/s for
// v = z − c·mp. It returns log N(z | c·mp, s) but for the −log √s term,
// as updateDense does, and √λ₂ and √s, the factors of the site's and the
// innovation's determinants (0 and 0 without a site: λ₂ ≤ 0), which the
// caller multiplies in chain order.
func updateScalar(mf, pf, mp, pp []float64, hj []int, hv []float64, l1, l2 float64, ut []float64) (l, sq, s float64, err error) {
	D := len(mp)
	mf, pf, pp, ut = mf[:D], pf[:D*D], pp[:D*D], ut[:D]
	if l2 <= 0 {
		copy(mf, mp)
		copy(pf, pp)
		return 0, 0, 0, nil
	}
	sq = math.Sqrt(l2)
	clear(ut)
	var a float64
	hv = hv[:len(hj)]
	for e, j := range hj {
		c := sq * hv[e]
		a += c * mp[j]
		for l, x := range pp[j*D : (j+1)*D] {
			ut[l] += c * x
		}
	}
	v := l1/sq - a
	for e, j := range hj {
		s += ut[j] * (sq * hv[e])
	}
	s++
	if !(s > 0) {
		return 0, 0, 0, errInnovation
	}
	s = math.Sqrt(s)
	inv := 1 / s
	for j := range ut {
		ut[j] *= inv
	}
	v *= inv
	for j, x := range ut {
		mf[j] = mp[j] + x*v
	}
	// The lower triangle of pf = pp − utᵀ·ut, mirrored.
	for i, ai := range ut {
		row := i * D
		for j, x := range ut[:i+1] {
			y := pp[row+j] - ai*x
			pf[row+j], pf[j*D+i] = y, y
		}
	}
	return -0.5*log2Pi - 0.5*v*v, sq, s, nil
}

// scalarMarginalSparse is scalarMarginal for H with non-zeros hv at hj.
func scalarMarginalSparse(x, P []float64, hj []int, hv []float64) (mean, v float64) {
	d := len(x)
	hv = hv[:len(hj)]
	for a, i := range hj {
		hi := hv[a]
		mean += hi * x[i]
		row := P[i*d : (i+1)*d]
		for b, j := range hj {
			v += hi * hv[b] * row[j]
		}
	}
	return mean, v
}
