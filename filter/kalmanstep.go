package filter

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/internal/linalg"
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
	tb               tblocks
}

func (w *denseWork) grow(m, d, rmax int) {
	D := m * d
	w.m, w.d, w.rmax = m, d, rmax
	w.tmp = linalg.Resize(w.tmp, D*D)
	w.chol = linalg.Resize(w.chol, D*D)
	w.e = linalg.Resize(w.e, D*D)
	w.t2 = linalg.Resize(w.t2, D*D)
	w.ut = linalg.Resize(w.ut, rmax*D)
	w.s = linalg.Resize(w.s, rmax*rmax)
	w.v = linalg.Resize(w.v, max(D, rmax))
	w.diff = linalg.Resize(w.diff, D)
	w.q = linalg.Resize(w.q, d*d)
	w.kscratch = linalg.Resize(w.kscratch, 3*d*d)
}

// predictDense writes mp = T·mf and pp = T·pf·Tᵀ + I⊗Q for the chain's
// transition T = I⊗A cut into blocks (with Q), exploiting the Kronecker
// and block structure.
func predictDense(mp, pp, mf, pf []float64, t *tblocks, w *denseWork) {
	t.sandwich(pp, pf, w.tmp, true, mp, mf)
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

// updateDense conditions N(mp, pp) on r whitened observations
// z = Cw·x + e, e ~ N(0, I), writing the filtered moments into mf, pf and
// returning log N(z | Cw·mp, Cw·pp·Cwᵀ + I) but for the term −log|L|: |L|
// is multiplied into det instead. It leaves L⁻¹·Cw·pp in w.ut,
// the Cholesky factor L of the innovation covariance in the lower triangle
// of w.s and L⁻¹ times the innovation in w.v.
//
// sup lists the columns outside which every row of cw is zero and cs holds
// cw's columns sup (r×len(sup)); the small updates read only cs, the large
// one only cw.
func updateDense(mf, pf, mp, pp, cw, cs, z []float64, sup []int, r int, w *denseWork, det *logProd) (float64, error) {
	D := w.m * w.d
	if r == 0 {
		copy(mf[:D], mp[:D])
		copy(pf[:D*D], pp[:D*D])
		return 0, nil
	}
	if r == 2 && 2*D*D <= linalg.SmallOps {
		return updateSupportTwoRows(mf, pf, mp, pp, cs, z, sup, D, w, det)
	}
	if r*D*D <= linalg.SmallOps {
		return updateSupport(mf, pf, mp, pp, cs, z, sup, r, D, w, det)
	}
	copy(mf[:D], mp[:D])
	copy(pf[:D*D], pp[:D*D])
	ut := w.ut[:r*D]
	s := w.s[:r*r]
	linalg.Gemm(blas.NoTrans, blas.NoTrans, 1, linalg.General(r, D, D, cw), linalg.General(D, D, D, pp), 0, linalg.General(r, D, D, ut))
	linalg.Gemm(blas.NoTrans, blas.Trans, 1, linalg.General(r, D, D, ut), linalg.General(r, D, D, cw), 0, linalg.General(r, r, r, s))
	for i := 0; i < r; i++ {
		s[i*r+i]++
	}
	if !linalg.Cholesky(s, r) {
		return 0, errInnovation
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
	linalg.TrsmLower(s, r, ut, D, D)
	linalg.TrsmLower(s, r, v, 1, 1)
	// mf += utᵀ·v
	for k := 0; k < r; k++ {
		vk := v[k]
		row := ut[k*D : (k+1)*D]
		for j, u := range row {
			mf[j] += u * vk
		}
	}
	linalg.Gemm(blas.Trans, blas.NoTrans, -1, linalg.General(r, D, D, ut), linalg.General(r, D, D, ut), 1, linalg.General(D, D, D, pf))
	linalg.Symmetrize(pf, D)
	ll := -0.5 * float64(r) * log2Pi
	for i := 0; i < r; i++ {
		det.mul(s[i*r+i])
		ll -= 0.5 * v[i] * v[i]
	}
	return ll, nil
}

// errInnovation is the update's failure: S = C·P·Cᵀ + I is not positive
// definite.
var errInnovation = fmt.Errorf("%w: the predicted covariance of the observed demand is not positive definite (extreme hyperparameters or sites?)", ErrNumerical)

// updateSupport is updateDense with plain loops for small r·D², touching
// only the state components the observation rows measure (their support
// sup; cs is r×len(sup): a site row reads one component per product for
// Matérn kernels).
func updateSupport(mf, pf, mp, pp, cs, z []float64, sup []int, r, D int, w *denseWork, det *logProd) (float64, error) {
	ns := len(sup)
	ut, s, v := w.ut[:r*D], w.s[:r*r], w.v[:r]
	mf, mp, pp, cs = mf[:D], mp[:D], pp[:D*D], cs[:r*ns]
	// ut = Cw·pp and v = z − Cw·mp.
	for k := 0; k < r; k++ {
		uk, ck := ut[k*D:(k+1)*D], cs[k*ns:(k+1)*ns]
		clear(uk)
		var a float64
		for e, j := range sup {
			c := ck[e]
			if c == 0 {
				continue
			}
			a += c * mp[j]
			row := pp[j*D : (j+1)*D]
			for l, x := range row {
				uk[l] += c * x
			}
		}
		v[k] = z[k] - a
	}
	// The lower triangle of s = Cw·pp·Cwᵀ + I.
	for k := 0; k < r; k++ {
		for l := 0; l <= k; l++ {
			var a float64
			for e, j := range sup {
				a += ut[k*D+j] * cs[l*ns+e]
			}
			s[k*r+l] = a
		}
		s[k*r+k]++
	}
	if !linalg.CholeskySmall(s, r) {
		return 0, errInnovation
	}
	// ut ← L⁻¹·ut, v ← L⁻¹·v.
	for i := 0; i < r; i++ {
		ui := ut[i*D : (i+1)*D]
		vi := v[i]
		for p := 0; p < i; p++ {
			l := s[i*r+p]
			up := ut[p*D : (p+1)*D]
			for j, x := range up {
				ui[j] -= l * x
			}
			vi -= l * v[p]
		}
		lii := s[i*r+i]
		det.mul(lii)
		inv := 1 / lii
		for j := range ui {
			ui[j] *= inv
		}
		v[i] = vi * inv
	}
	// mf = mp + utᵀ·v, pf = pp − utᵀ·ut.
	copy(mf, mp)
	for k := 0; k < r; k++ {
		vk := v[k]
		for j, x := range ut[k*D : (k+1)*D] {
			mf[j] += x * vk
		}
	}
	downdate(pf, pp, ut, r, D)
	ll := -0.5 * float64(r) * log2Pi
	for i := 0; i < r; i++ {
		ll -= 0.5 * v[i] * v[i]
	}
	return ll, nil
}

// updateSupportTwoRows is updateSupport for two observation rows (two
// products), in single passes: the rows being short, every loop's setup
// costs about as much as its body.
func updateSupportTwoRows(mf, pf, mp, pp, cs, z []float64, sup []int, D int, w *denseWork, det *logProd) (float64, error) {
	ns := len(sup)
	ut, s, v := w.ut[:2*D], w.s[:4], w.v[:2]
	mf, mp, pp, cs = mf[:D], mp[:D], pp[:D*D], cs[:2*ns]
	u0, u1, c0, c1 := ut[:D], ut[D:], cs[:ns], cs[ns:]
	// ut = Cw·pp over pairs of sup's entries, and Cw·mp.
	var m0, m1 float64
	for e := 0; e < len(sup); e += 2 {
		j0 := sup[e]
		j1 := j0
		x0, x1, y0, y1 := c0[e], c1[e], 0.0, 0.0
		if e+1 < len(sup) {
			j1 = sup[e+1]
			y0, y1 = c0[e+1], c1[e+1]
		}
		m0 += x0*mp[j0] + y0*mp[j1]
		m1 += x1*mp[j0] + y1*mp[j1]
		p0, p1 := pp[j0*D:j0*D+D], pp[j1*D:j1*D+D]
		if e == 0 {
			for l := range u0 {
				x, y := p0[l], p1[l]
				u0[l], u1[l] = x0*x+y0*y, x1*x+y1*y
			}
			continue
		}
		for l := range u0 {
			x, y := p0[l], p1[l]
			u0[l], u1[l] = u0[l]+x0*x+y0*y, u1[l]+x1*x+y1*y
		}
	}
	if len(sup) == 0 {
		clear(ut)
	}
	// S = Cw·pp·Cwᵀ + I = L·Lᵀ.
	var s00, s10, s11 float64
	for e, j := range sup {
		x, c := u1[j], c0[e]
		s00 += u0[j] * c
		s10 += x * c
		s11 += x * c1[e]
	}
	l00 := math.Sqrt(s00 + 1)
	l10 := s10 / l00
	d := s11 + 1 - l10*l10
	if !(l00 > 0) || !(d > 0) {
		return 0, errInnovation
	}
	l11 := math.Sqrt(d)
	s[0], s[2], s[3] = l00, l10, l11
	det.mul(l00)
	det.mul(l11)
	// v = L⁻¹(z − Cw·mp); ut ← L⁻¹·ut and mf = mp + utᵀ·v in one pass.
	i0, i1 := 1/l00, 1/l11
	v0 := (z[0] - m0) * i0
	v1 := (z[1] - m1 - l10*v0) * i1
	v[0], v[1] = v0, v1
	for j, x := range u0 {
		x *= i0
		y := (u1[j] - l10*x) * i1
		u0[j], u1[j] = x, y
		mf[j] = mp[j] + x*v0 + y*v1
	}
	downdate(pf, pp, ut, 2, D)
	return -log2Pi - 0.5*(v0*v0+v1*v1), nil
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
	if linalg.Cholesky(ch, D) {
		linalg.TrsmLower(ch, D, x, D, D)
		linalg.TrsmLowerT(ch, D, x, D, D)
	} else if !linalg.PSDSolve(ppN, D, x, D) {
		return fmt.Errorf("%w: the smoother's predicted covariance is not positive semi-definite", ErrNumerical)
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
	linalg.Gemm(blas.NoTrans, blas.NoTrans, 1, linalg.General(D, D, D, e), linalg.General(D, D, D, x), 0, linalg.General(D, D, D, w.t2))
	copy(ps[:D*D], pf[:D*D])
	linalg.Gemm(blas.Trans, blas.NoTrans, 1, linalg.General(D, D, D, x), linalg.General(D, D, D, w.t2), 1, linalg.General(D, D, D, ps))
	linalg.Symmetrize(ps, D)
	return nil
}

// downdate writes pf = pp − utᵀ·ut for the r×D ut: its lower triangle,
// mirrored. With two rows of ut (two products) the rows of ut are read
// once per entry; otherwise two rows of ut at a time. Indexing the whole
// matrices, rather than slicing rows, suits these short rows.
func downdate(pf, pp, ut []float64, r, D int) {
	pf, pp = pf[:D*D], pp[:D*D]
	if r == 2 {
		// Rows i and i+1 of pf together.
		u0, u1 := ut[:D], ut[D:2*D]
		i := 0
		for ; i+1 < D; i += 2 {
			a0, b0, a1, b1 := u0[i], u1[i], u0[i+1], u1[i+1]
			r0, r1 := i*D, i*D+D
			for j := 0; j <= i; j++ {
				x, y := u0[j], u1[j]
				v0 := pp[r0+j] - a0*x - b0*y
				v1 := pp[r1+j] - a1*x - b1*y
				pf[r0+j], pf[r1+j] = v0, v1
				pf[j*D+i], pf[j*D+i+1] = v0, v1
			}
			pf[r1+i+1] = pp[r1+i+1] - a1*a1 - b1*b1
		}
		if i < D {
			a0, b0, r0 := u0[i], u1[i], i*D
			for j := 0; j <= i; j++ {
				v0 := pp[r0+j] - a0*u0[j] - b0*u1[j]
				pf[r0+j], pf[j*D+i] = v0, v0
			}
		}
		return
	}
	for i := 0; i < D; i++ {
		row := i * D
		for j := 0; j <= i; j++ {
			pf[row+j] = pp[row+j]
		}
		for k := 0; k < r; k += 2 {
			u0 := ut[k*D : (k+1)*D]
			a := u0[i]
			if k+1 == r {
				for j := 0; j <= i; j++ {
					pf[row+j] -= a * u0[j]
				}
				break
			}
			u1 := ut[(k+1)*D : (k+2)*D]
			b := u1[i]
			for j := 0; j <= i; j++ {
				pf[row+j] = pf[row+j] - a*u0[j] - b*u1[j]
			}
		}
		for j := 0; j < i; j++ {
			pf[j*D+i] = pf[row+j]
		}
	}
}
