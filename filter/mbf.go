package filter

import (
	"math"

	"github.com/dcgpd/dcgpd/internal/linalg"
	"gonum.org/v1/gonum/blas"
)

// mbfStore keeps, per bin of a coupled chain, what the modified
// Bryson–Frazier backward pass needs from the filter: the number r of
// whitened observation rows, U = L⁻¹·C·P⁻ and V = L⁻¹·C (r×D each, with
// S = L·Lᵀ the innovation covariance) and w = L⁻¹·v (the whitened
// innovation). For small steps V is kept only on the support S of its
// rows (the state components the bin's sites measure; V is zero
// elsewhere), as the r×|S| block V_S. Below U it keeps W = C_f·P, the
// filtered covariance's rows for f, so that the backward pass multiplies
// both by the same matrix in one pass.
type mbfStore struct {
	r   []int
	uw  []float64 // N·2rmax·D: U (r rows) over W (N_p = rmax rows)
	v   []float64 // N·rmax·D
	w   []float64 // N·rmax
	ns  []int     // support sizes
	sup []int     // N·D: support of V's rows
}

func (s *mbfStore) grow(n, rmax, D int) {
	if cap(s.r) < n {
		s.r, s.ns = make([]int, n), make([]int, n)
	}
	if cap(s.sup) < n*D {
		s.sup = make([]int, n*D)
	}
	s.r, s.ns, s.sup = s.r[:n], s.ns[:n], s.sup[:n*D]
	s.uw = linalg.Resize(s.uw, n*2*rmax*D)
	s.v = linalg.Resize(s.v, n*rmax*D)
	s.w = linalg.Resize(s.w, n*rmax)
}

// slot returns bin n's U over W, for updateDense to write U in place.
func (s *mbfStore) slot(n, rmax, D int) []float64 {
	return s.uw[n*2*rmax*D : (n+1)*2*rmax*D]
}

// record stores bin n's update, read from the dense work after updateDense
// wrote U into slot(n).
func (s *mbfStore) record(n, r, rmax, D int, cw, cs []float64, sup []int, w *denseWork) {
	s.r[n] = r
	if r == 0 {
		return
	}
	copy(s.w[n*rmax:n*rmax+r], w.v[:r])
	o := n * rmax * D
	if r*D*D > linalg.SmallOps {
		v := s.v[o : o+r*D]
		copy(v, cw[:r*D])
		linalg.TrsmLower(w.s, r, v, D, D)
		return
	}
	// V_S = L⁻¹·Cw_S on the support of Cw's rows.
	ns := len(sup)
	s.ns[n] = copy(s.sup[n*D:(n+1)*D], sup)
	v := s.v[o : o+r*ns]
	for k := 0; k < r; k++ {
		inv := 1 / w.s[k*r+k]
		for a := 0; a < ns; a++ {
			x := cs[k*ns+a]
			for p := 0; p < k; p++ {
				x -= w.s[k*r+p] * v[p*ns+a]
			}
			v[k*ns+a] = x * inv
		}
	}
}

// mbfWork is the scratch of the backward pass.
type mbfWork struct {
	rv, sv  []float64 // D
	N, M, T []float64 // D×D
	XG      []float64 // (rmax+np)×D: U M over W M
	X, Q    []float64 // rmax×D (large steps)
	Y, YV   []float64 // rmax×rmax, rmax×D
	Z       []float64 // D×D: (V_Sᵀ·X)ᵀ
	at      tblocks
}

func (b *mbfWork) grow(D, rmax, np int) {
	b.rv, b.sv = linalg.Resize(b.rv, D), linalg.Resize(b.sv, D)
	b.N, b.M, b.T = linalg.Resize(b.N, D*D), linalg.Resize(b.M, D*D), linalg.Resize(b.T, D*D)
	b.XG = linalg.Resize(b.XG, (rmax+np)*D)
	b.X, b.Q = linalg.Resize(b.X, rmax*D), linalg.Resize(b.Q, rmax*D)
	b.Y, b.YV = linalg.Resize(b.Y, rmax*rmax), linalg.Resize(b.YV, rmax*D)
	b.Z = linalg.Resize(b.Z, D*D)
}

// marginalsMBF runs the modified Bryson–Frazier (de Jong / Durbin–Koopman)
// backward pass over a filtered coupled chain and writes the smoothed
// marginal mean and joint covariance of f per bin into p.Mean, p.Var and
// p.Cov. With r_N = 0, N_N = 0 and, per bin from the last,
//
//	r ← Vᵀw + (I − VᵀU)·Aᵀr,   N ← VᵀV + (I − VᵀU)·AᵀNA·(I − UᵀV),
//
// the smoothed state is m⁻ + P⁻r and P⁻ − P⁻NP⁻, of which only the
// N_p×N_p block of f = C_f·x is formed. Every step costs O(r·D² + N_p·D²)
// instead of the RTS smoother's O(D³): the sites touch at most N_p of the
// D state directions per bin.
func (p *Posterior) marginalsMBF(c *chain, st *mbfStore, copies, d, rmax int) {
	np := p.NP
	D := c.dim
	dd := d * d
	b := &p.mbfw
	b.grow(D, rmax, np)
	rv := b.rv
	clear(rv)
	clear(b.N)
	last := len(p.Times) - 1
	for n := last; n >= 0; n-- {
		// Propagate the information of bins > n back through A_{n+1}:
		// s = Aᵀr, M = AᵀNA.
		sv, N, M := b.sv, b.N, b.M
		if n < last {
			// b.at holds A_{n+2} unless this is the first step.
			if n == last-1 || c.aFrom[n+1] != c.aFrom[n+2] {
				b.at.set(c.transition(n+1, dd), nil, d, copies, true)
			}
			b.at.sandwich(M, N, b.T, false, sv, rv)
		} else {
			clear(sv)
			clear(M)
		}
		// The f marginal from the filtered moments, which s and M smooth:
		// x = m + P s and P − P M P, so with W = C_f P the mean is
		// C_f m + W s and the covariance W C_fᵀ − (W M) Wᵀ.
		r := st.r[n]
		small := r*D*D <= linalg.SmallOps // V's layout, as record decided
		mf := c.mf[n*D : (n+1)*D]
		// W follows U, so that one pass over M gives X = U M and G = W M.
		UW := st.slot(n, rmax, D)[:(r+np)*D]
		XG := b.XG[:(r+np)*D]
		U, W, G := UW[:r*D], UW[r*D:], XG[r*D:]
		switch {
		case (r+np)*D*D <= 2*linalg.SmallOps:
			mulSym(XG, UW, M, r+np, D)
		default:
			linalg.Gemm(blas.NoTrans, blas.NoTrans, 1, linalg.General(np, D, D, W), linalg.General(D, D, D, M), 0, linalg.General(np, D, D, G))
			if small && r > 0 {
				mulSym(XG, U, M, r, D)
			}
		}
		p.fSmoothed(p.Mean[n*np:(n+1)*np], p.Var[n*np:(n+1)*np], p.Cov[n*np*np:(n+1)*np*np], W, G, mf, sv)
		b.addSites(st, n, r, rmax, D, small, U, M)
		b.N, b.M = M, N
	}
}

// addSites adds the information of bin n's own r whitened sites to the
// propagated s (b.sv) and M: r = s + Vᵀ(w − U·s) into b.rv, and
// N = M + Vᵀ((I + U M Uᵀ)V − U M) − (U M)ᵀ V in M's buffer, given X = U M
// in b.XG when small.
func (b *mbfWork) addSites(st *mbfStore, n, r, rmax, D int, small bool, U, M []float64) {
	rv, sv := b.rv, b.sv
	copy(rv, sv)
	if r == 0 {
		return
	}
	w := st.w[n*rmax : n*rmax+r]
	S := st.sup[n*D : n*D+st.ns[n]]
	ns := D
	if small {
		ns = len(S)
	}
	V := st.v[n*rmax*D : n*rmax*D+r*ns]
	for k := 0; k < r; k++ {
		var acc float64
		for j, u := range U[k*D : (k+1)*D] {
			acc += u * sv[j]
		}
		uw := w[k] - acc
		vk := V[k*ns : (k+1)*ns]
		if small {
			for a, j := range S {
				rv[j] += vk[a] * uw
			}
			continue
		}
		for j, v := range vk {
			rv[j] += v * uw
		}
	}
	if small {
		updateInformationSupport(M, U, V, b.XG[:r*D], S, b, r, D)
	} else {
		updateInformation(M, U, V, b.X[:r*D], b.Y[:r*r], b.Q[:r*D], r, D)
	}
}

// fRows writes W = C_f·P (N_p×D) for the state covariance P.
func (p *Posterior) fRows(W, P []float64) {
	D := p.D
	if p.unitF() {
		for k, j := range p.sel {
			copy(W[k*D:(k+1)*D], P[j*D:(j+1)*D])
		}
		return
	}
	for k := 0; k < p.NP; k++ {
		wk := W[k*D : (k+1)*D]
		k0, k1 := p.cfp[k], p.cfp[k+1]
		if k0 == k1 {
			clear(wk)
			continue
		}
		for e := k0; e < k1; e++ {
			v, row := p.cfv[e], P[p.cfj[e]*D:]
			row = row[:len(wk)]
			if e == k0 {
				for j, x := range row {
					wk[j] = v * x
				}
			} else {
				for j, x := range row {
					wk[j] += v * x
				}
			}
		}
	}
}

// fSmoothed writes the mean, variances and covariance of f = C_f·x for
// x ~ N(m + P s, P − P M P), given W = C_f P and G = W M.
func (p *Posterior) fSmoothed(mean, vari, cov, W, G, m, s []float64) {
	np, D := p.NP, p.D
	W, G, s = W[:np*D], G[:np*D], s[:D]
	unit := p.unitF()
	for k := 0; k < np; k++ {
		wk, gk := W[k*D:(k+1)*D], G[k*D:(k+1)*D]
		var mu float64
		if unit {
			mu = m[p.sel[k]]
		} else {
			for e := p.cfp[k]; e < p.cfp[k+1]; e++ {
				mu += p.cfv[e] * m[p.cfj[e]]
			}
		}
		for j, x := range wk {
			mu += x * s[j]
		}
		mean[k] = mu
		for l := 0; l <= k; l++ {
			var v float64
			if unit {
				v = wk[p.sel[l]]
			} else {
				for e := p.cfp[l]; e < p.cfp[l+1]; e++ {
					v += wk[p.cfj[e]] * p.cfv[e]
				}
			}
			wl := W[l*D : (l+1)*D]
			for j, g := range gk {
				v -= g * wl[j]
			}
			cov[k*np+l], cov[l*np+k] = v, v
		}
		vari[k] = math.Max(cov[k*np+k], 0)
	}
}

// updateInformation overwrites the symmetric D×D M with
// N = M + Vᵀ((I + X Uᵀ)V − X) − Xᵀ V, X = U M, for the r×D U and V (X,
// Y = I + X Uᵀ and Q = Y V − X are r×D, r×r, r×D scratch), through BLAS:
// the large steps' update.
func updateInformation(M, U, V, X, Y, Q []float64, r, D int) {
	linalg.Gemm(blas.NoTrans, blas.NoTrans, 1, linalg.General(r, D, D, U), linalg.General(D, D, D, M), 0, linalg.General(r, D, D, X))
	linalg.Gemm(blas.NoTrans, blas.Trans, 1, linalg.General(r, D, D, X), linalg.General(r, D, D, U), 0, linalg.General(r, r, r, Y))
	for k := 0; k < r; k++ {
		Y[k*r+k]++
	}
	linalg.Gemm(blas.NoTrans, blas.NoTrans, 1, linalg.General(r, r, r, Y), linalg.General(r, D, D, V), 0, linalg.General(r, D, D, Q))
	for i := range Q {
		Q[i] -= X[i]
	}
	linalg.Gemm(blas.Trans, blas.NoTrans, 1, linalg.General(r, D, D, V), linalg.General(r, D, D, Q), 1, linalg.General(D, D, D, M))
	linalg.Gemm(blas.Trans, blas.NoTrans, -1, linalg.General(r, D, D, X), linalg.General(r, D, D, V), 1, linalg.General(D, D, D, M))
	linalg.Symmetrize(M, D)
}

// updateInformationSupport is updateInformation for small r·D² through V's
// support S (the measured components; V is zero elsewhere, and VS is the
// r×|S| block on S), given X = U M: with Y = I + X Uᵀ, Z = V_Sᵀ X and
// C = V_Sᵀ Y V_S,
//
//	N = M − Vᵀ X − Xᵀ V + Vᵀ Y V
//
// differs from M only in the rows and columns S: by −Z outside S×S and by
// C − Z − Zᵀ inside. Both triangles are written, so N is exactly symmetric.
func updateInformationSupport(M, U, VS, X []float64, S []int, b *mbfWork, r, D int) {
	if r == 2 {
		updateInformationSupportTwoRows(M, U, VS, X, S, D)
		return
	}
	updateInformationSupportRows(M, U, VS, X, S, b, r, D)
}

// updateInformationSupportRows is updateInformationSupport for any r.
func updateInformationSupportRows(M, U, VS, X []float64, S []int, b *mbfWork, r, D int) {
	ns := len(S)
	M, U, VS, X = M[:D*D], U[:r*D], VS[:r*ns], X[:r*D]
	Z := b.Z[:ns*D]
	// Z = V_Sᵀ X, kept transposed (ns×D).
	for a := 0; a < ns; a++ {
		za := Z[a*D : a*D+D]
		clear(za)
		for k := 0; k < r; k++ {
			va := VS[k*ns+a]
			for i, x := range X[k*D : k*D+D] {
				za[i] += x * va
			}
		}
	}
	subtractZ(M, Z, S, D)
	Y, YV := b.Y[:r*r], b.YV[:r*ns]
	for k := 0; k < r; k++ {
		xk := X[k*D : (k+1)*D]
		for l := 0; l <= k; l++ {
			ul := U[l*D : (l+1)*D]
			var acc float64
			for j, x := range xk {
				acc += x * ul[j]
			}
			Y[k*r+l], Y[l*r+k] = acc, acc
		}
		Y[k*r+k]++
	}
	for k := 0; k < r; k++ {
		for a := 0; a < ns; a++ {
			var acc float64
			for l := 0; l < r; l++ {
				acc += Y[k*r+l] * VS[l*ns+a]
			}
			YV[k*ns+a] = acc
		}
	}
	for a, ja := range S {
		for c, jc := range S[:a+1] {
			v := M[ja*D+jc]
			if c == a {
				v -= Z[a*D+ja]
			}
			var acc float64
			for k := 0; k < r; k++ {
				acc += VS[k*ns+c] * YV[k*ns+a]
			}
			v += acc
			M[ja*D+jc], M[jc*D+ja] = v, v
		}
	}
}

// updateInformationSupportTwoRows is updateInformationSupport for two observation rows,
// with Y and C in closed form.
func updateInformationSupportTwoRows(M, U, VS, X []float64, S []int, D int) {
	ns := len(S)
	M, U, VS, X = M[:D*D], U[:2*D], VS[:2*ns], X[:2*D]
	x0, x1, u0, u1 := X[:D], X[D:2*D], U[:D], U[D:2*D]
	// Rows and columns S lose Z = V_Sᵀ X (both triangles, so that S×S
	// loses Z and Zᵀ but its diagonal Z only once).
	for a, ja := range S {
		va, vb := VS[a], VS[ns+a]
		for i, x := range x0 {
			v := M[i*D+ja] - (x*va + x1[i]*vb)
			M[i*D+ja], M[ja*D+i] = v, v
		}
	}
	// Y = I + X Uᵀ; S×S gains C = V_Sᵀ Y V_S, the diagonal loses Z again.
	var y00, y10, y11 float64
	for j, x := range x0 {
		y00 += x * u0[j]
		y10 += x1[j] * u0[j]
		y11 += x1[j] * u1[j]
	}
	y00++
	y11++
	for a, ja := range S {
		va, vb := VS[a], VS[ns+a]
		p0, p1 := y00*va+y10*vb, y10*va+y11*vb // (Y V_S)[:, a]
		for c, jc := range S[:a+1] {
			v := M[ja*D+jc]
			if c == a {
				v -= x0[ja]*va + x1[ja]*vb
			}
			v += VS[c]*p0 + VS[ns+c]*p1
			M[ja*D+jc], M[jc*D+ja] = v, v
		}
	}
}

// subtractZ subtracts Z[a,:] from row and column S[a] of the symmetric M
// for every a, keeping M symmetric: an entry of S×S loses both Z[a, S[c]]
// and Z[c, S[a]], its diagonal only the first.
func subtractZ(M, Z []float64, S []int, D int) {
	for a, ja := range S {
		za := Z[a*D : a*D+D]
		for i, z := range za {
			v := M[i*D+ja] - z
			M[i*D+ja], M[ja*D+i] = v, v
		}
	}
}

// mulSym writes c = a·b for the r×D a and the symmetric D×D b as dot
// products of rows (b's rows being its columns), four rows of a at a time
// so that each row of b is read once per four.
func mulSym(c, a, b []float64, r, D int) {
	a, b, c = a[:r*D], b[:D*D], c[:r*D]
	k := 0
	for ; k+3 < r; k += 4 {
		a0, a1, a2, a3 := a[k*D:k*D+D], a[k*D+D:k*D+2*D], a[k*D+2*D:k*D+3*D], a[k*D+3*D:k*D+4*D]
		a1, a2, a3 = a1[:len(a0)], a2[:len(a0)], a3[:len(a0)]
		for l := 0; l < D; l++ {
			bl := b[l*D:]
			bl = bl[:len(a0)]
			var s0, s1, s2, s3 float64
			for j, x := range a0 {
				y := bl[j]
				s0 += x * y
				s1 += a1[j] * y
				s2 += a2[j] * y
				s3 += a3[j] * y
			}
			c[k*D+l], c[k*D+D+l], c[k*D+2*D+l], c[k*D+3*D+l] = s0, s1, s2, s3
		}
	}
	for ; k+1 < r; k += 2 {
		a0, a1 := a[k*D:k*D+D], a[k*D+D:k*D+2*D]
		a1 = a1[:len(a0)]
		for l := 0; l < D; l++ {
			bl := b[l*D:]
			bl = bl[:len(a0)]
			var s0, s1 float64
			for j, x := range a0 {
				y := bl[j]
				s0 += x * y
				s1 += a1[j] * y
			}
			c[k*D+l], c[k*D+D+l] = s0, s1
		}
	}
	if k < r {
		a0 := a[k*D : k*D+D]
		for l := 0; l < D; l++ {
			bl := b[l*D : l*D+D]
			var s0 float64
			for j, x := range bl {
				s0 += a0[j] * x
			}
			c[k*D+l] = s0
		}
	}
}
