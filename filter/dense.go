package filter

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/blas"
)

const log2Pi = 1.8378770664093454835606594728112352797227949472755668

// denseWork is the scratch space of the dense Kalman step for a state of
// m copies of a d-dimensional temporal state (D = m·d) observed through at
// most rmax whitened rows.
type denseWork struct {
	m, d, rmax       int
	tmp, chol, e, t2 []float64 // D×D
	ut               []float64 // rmax×D
	s                []float64 // rmax×rmax
	v, diff          []float64 // D
	q                []float64 // d×d
	kscratch         []float64 // 3d²
}

func (w *denseWork) grow(m, d, rmax int) {
	D := m * d
	w.m, w.d, w.rmax = m, d, rmax
	w.tmp = resize(w.tmp, D*D)
	w.chol = resize(w.chol, D*D)
	w.e = resize(w.e, D*D)
	w.t2 = resize(w.t2, D*D)
	w.ut = resize(w.ut, rmax*D)
	w.s = resize(w.s, rmax*rmax)
	w.v = resize(w.v, max(D, rmax))
	w.diff = resize(w.diff, D)
	w.q = resize(w.q, d*d)
	w.kscratch = resize(w.kscratch, 3*d*d)
}

// predictDense writes mp = (I⊗A)·mf and pp = (I⊗A)·pf·(I⊗A)ᵀ + I⊗Q,
// exploiting the Kronecker structure: 2·m·D·d² flops instead of 4·D³.
func predictDense(mp, pp, mf, pf, a, q []float64, w *denseWork) {
	m, d := w.m, w.d
	D := m * d
	tmp := w.tmp
	// pp = (I⊗A)·((I⊗A)·pf)ᵀ, which equals (I⊗A)·pf·(I⊗A)ᵀ because pf is
	// symmetric; A always multiplies from the left so its zeros (the
	// block-diagonal rotations of periodic components, the blocks of sums)
	// are skipped.
	kronLeft(tmp, a, pf, m, d)
	transposeInto(w.t2, tmp, D)
	kronLeft(pp, a, w.t2, m, d)
	for i := 0; i < m; i++ {
		o := i * d
		for r := 0; r < d; r++ {
			row := pp[(o+r)*D+o:]
			for c := 0; c < d; c++ {
				row[c] += q[r*d+c]
			}
			var s float64
			for c := 0; c < d; c++ {
				s += a[r*d+c] * mf[o+c]
			}
			mp[o+r] = s
		}
	}
	symmetrize(pp, D)
}

// kronLeft writes dst = (I_m ⊗ A)·src for a D×D src (D = m·d), skipping
// the zeros of A: row o+r of dst is Σ_c A[r,c]·(row o+c of src).
func kronLeft(dst, a, src []float64, m, d int) {
	D := m * d
	for i := 0; i < m; i++ {
		o := i * d
		for r := 0; r < d; r++ {
			out := dst[(o+r)*D : (o+r+1)*D]
			clear(out)
			for c := 0; c < d; c++ {
				arc := a[r*d+c]
				if arc == 0 {
					continue
				}
				in := src[(o+c)*D : (o+c+1)*D]
				for j, v := range in {
					out[j] += arc * v
				}
			}
		}
	}
}

// transposeInto writes the transpose of the n×n src into dst.
func transposeInto(dst, src []float64, n int) {
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			dst[j*n+i] = src[i*n+j]
		}
	}
}

// updateDense conditions N(mp, pp) on r whitened observations
// z = Cw·x + e, e ~ N(0, I), writing the filtered moments into mf, pf and
// returning log N(z | Cw·mp, Cw·pp·Cwᵀ + I).
func updateDense(mf, pf, mp, pp, cw, z []float64, r int, w *denseWork) (float64, error) {
	D := w.m * w.d
	copy(mf[:D], mp[:D])
	copy(pf[:D*D], pp[:D*D])
	if r == 0 {
		return 0, nil
	}
	ut := w.ut[:r*D]
	s := w.s[:r*r]
	gemm(blas.NoTrans, blas.NoTrans, 1, general(r, D, D, cw), general(D, D, D, pp), 0, general(r, D, D, ut))
	gemm(blas.NoTrans, blas.Trans, 1, general(r, D, D, ut), general(r, D, D, cw), 0, general(r, r, r, s))
	for i := 0; i < r; i++ {
		s[i*r+i]++
	}
	if !cholesky(s, r) {
		return 0, errors.New("filter: innovation covariance is not positive definite (non-finite state?)")
	}
	v := w.v[:r]
	for k := 0; k < r; k++ {
		var acc float64
		row := cw[k*D : (k+1)*D]
		for j, c := range row {
			acc += c * mp[j]
		}
		v[k] = z[k] - acc
	}
	trsmLower(s, r, ut, D, D)
	trsmLower(s, r, v, 1, 1)
	// mf += utᵀ·v
	for k := 0; k < r; k++ {
		vk := v[k]
		row := ut[k*D : (k+1)*D]
		for j, u := range row {
			mf[j] += u * vk
		}
	}
	gemm(blas.Trans, blas.NoTrans, -1, general(r, D, D, ut), general(r, D, D, ut), 1, general(D, D, D, pf))
	symmetrize(pf, D)
	ll := -0.5 * float64(r) * log2Pi
	for i := 0; i < r; i++ {
		ll -= math.Log(s[i*r+i]) + 0.5*v[i]*v[i]
	}
	return ll, nil
}

// smoothDense performs one RTS step: from the smoothed moments of bin n+1
// (msN, psN), its prediction (mpN, ppN) and transition aN, and the filtered
// moments of bin n (mf, pf), it writes the smoothed moments of bin n.
func smoothDense(ms, ps, mf, pf, msN, psN, mpN, ppN, aN []float64, w *denseWork) error {
	m, d := w.m, w.d
	D := m * d
	x := w.tmp // becomes Gᵀ = ppN⁻¹ (I⊗A) pf
	kronLeft(x, aN, pf, m, d)
	ch := w.chol
	copy(ch[:D*D], ppN[:D*D])
	if cholesky(ch, D) {
		trsmLower(ch, D, x, D, D)
		trsmLowerT(ch, D, x, D, D)
	} else if !psdSolveInPlace(ppN, D, x, D) {
		return errors.New("filter: smoother: predicted covariance cannot be factorised")
	}
	diff := w.diff
	for i := 0; i < D; i++ {
		diff[i] = msN[i] - mpN[i]
	}
	copy(ms[:D], mf[:D])
	// ms += xᵀ·diff
	for k := 0; k < D; k++ {
		dk := diff[k]
		if dk == 0 {
			continue
		}
		row := x[k*D : (k+1)*D]
		for j, u := range row {
			ms[j] += u * dk
		}
	}
	e := w.e
	for i := 0; i < D*D; i++ {
		e[i] = psN[i] - ppN[i]
	}
	gemm(blas.NoTrans, blas.NoTrans, 1, general(D, D, D, e), general(D, D, D, x), 0, general(D, D, D, w.t2))
	copy(ps[:D*D], pf[:D*D])
	gemm(blas.Trans, blas.NoTrans, 1, general(D, D, D, x), general(D, D, D, w.t2), 1, general(D, D, D, ps))
	symmetrize(ps, D)
	return nil
}
