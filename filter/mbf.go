package filter

import "math"

// mbfStore keeps, per bin of a coupled chain, what the modified
// Bryson–Frazier backward pass needs from the filter: the number r of
// whitened observation rows, U = L⁻¹·C·P⁻ and V = L⁻¹·C (r×D each, with
// S = L·Lᵀ the innovation covariance) and w = L⁻¹·v (the whitened
// innovation).
type mbfStore struct {
	r    []int
	u, v []float64 // N·rmax·D
	w    []float64 // N·rmax
}

func (s *mbfStore) grow(n, rmax, D int) {
	if cap(s.r) < n {
		s.r = make([]int, n)
	}
	s.r = s.r[:n]
	s.u = resize(s.u, n*rmax*D)
	s.v = resize(s.v, n*rmax*D)
	s.w = resize(s.w, n*rmax)
}

// record stores bin n's update, read from the dense work after updateDense.
func (s *mbfStore) record(n, r, rmax, D int, cw []float64, w *denseWork) {
	s.r[n] = r
	if r == 0 {
		return
	}
	u := s.u[n*rmax*D : n*rmax*D+r*D]
	v := s.v[n*rmax*D : n*rmax*D+r*D]
	copy(u, w.ut[:r*D])
	copy(v, cw[:r*D])
	trsmLower(w.s, r, v, D, D)
	copy(s.w[n*rmax:n*rmax+r], w.v[:r])
}

// mbfWork is the scratch of the backward pass.
type mbfWork struct {
	rv, rprev, sv []float64 // D
	N, M, T, tt   []float64 // D×D
	X, Q          []float64 // rmax×D
	Y, uw         []float64 // rmax×rmax, rmax
	cf, wf, g1    []float64 // np×D
	mu            []float64 // np
}

func (b *mbfWork) grow(D, rmax, np int) {
	for _, p := range []*[]float64{&b.rv, &b.rprev, &b.sv} {
		*p = resize(*p, D)
	}
	for _, p := range []*[]float64{&b.N, &b.M, &b.T, &b.tt} {
		*p = resize(*p, D*D)
	}
	b.X, b.Q = resize(b.X, rmax*D), resize(b.Q, rmax*D)
	b.Y, b.uw = resize(b.Y, rmax*rmax), resize(b.uw, rmax)
	b.cf, b.wf, b.g1 = resize(b.cf, np*D), resize(b.wf, np*D), resize(b.g1, np*D)
	b.mu = resize(b.mu, np)
}

// kronLeftT writes dst = (I_m ⊗ A)ᵀ·src for a D×D src, skipping zeros of A.
func kronLeftT(dst, a, src []float64, m, d int) {
	D := m * d
	for i := 0; i < m; i++ {
		o := i * d
		for c := 0; c < d; c++ {
			out := dst[(o+c)*D : (o+c+1)*D]
			clear(out)
			for r := 0; r < d; r++ {
				arc := a[r*d+c]
				if arc == 0 {
					continue
				}
				in := src[(o+r)*D : (o+r+1)*D]
				for j, v := range in {
					out[j] += arc * v
				}
			}
		}
	}
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
	// C_f = B·(I⊗H): row k mixes the latents' measurement rows.
	cf := b.cf
	clear(cf)
	for k := 0; k < np; k++ {
		for j, hr := range p.rows {
			bkj := p.model.b[k*np+j]
			if bkj == 0 {
				continue
			}
			for a, h := range hr.h {
				cf[k*D+hr.off+a] += bkj * h
			}
		}
	}
	rv, N := b.rv, b.N
	clear(rv)
	clear(N)
	last := len(p.Times) - 1
	for n := last; n >= 0; n-- {
		// Propagate the information of bins > n back through A_{n+1}.
		sv := b.sv
		M := b.M
		if n < last {
			an := c.a[(n+1)*dd : (n+2)*dd]
			for i := 0; i < copies; i++ {
				o := i * d
				for cc := 0; cc < d; cc++ {
					var s float64
					for r := 0; r < d; r++ {
						s += an[r*d+cc] * rv[o+r]
					}
					sv[o+cc] = s
				}
			}
			kronLeftT(b.T, an, N, copies, d)
			transposeInto(b.tt, b.T, D)
			kronLeftT(M, an, b.tt, copies, d)
		} else {
			clear(sv)
			clear(M)
		}
		r := st.r[n]
		rprev := b.rprev
		copy(rprev, sv)
		if r > 0 {
			U := st.u[n*rmax*D : n*rmax*D+r*D]
			V := st.v[n*rmax*D : n*rmax*D+r*D]
			w := st.w[n*rmax : n*rmax+r]
			// rprev = s + Vᵀ(w − U·s).
			uw := b.uw[:r]
			for k := 0; k < r; k++ {
				var acc float64
				for j, u := range U[k*D : (k+1)*D] {
					acc += u * sv[j]
				}
				uw[k] = w[k] - acc
			}
			for k := 0; k < r; k++ {
				for j, v := range V[k*D : (k+1)*D] {
					rprev[j] += v * uw[k]
				}
			}
			// N = M + Vᵀ((I + U M Uᵀ)V − U M) − (U M)ᵀ V.
			X := b.X[:r*D]
			gemm(noTrans, noTrans, 1, general(r, D, D, U), general(D, D, D, M), 0, general(r, D, D, X))
			Y := b.Y[:r*r]
			gemm(noTrans, trans, 1, general(r, D, D, X), general(r, D, D, U), 0, general(r, r, r, Y))
			for k := 0; k < r; k++ {
				Y[k*r+k]++
			}
			Q := b.Q[:r*D]
			gemm(noTrans, noTrans, 1, general(r, r, r, Y), general(r, D, D, V), 0, general(r, D, D, Q))
			for i := range Q {
				Q[i] -= X[i]
			}
			copy(N, M)
			gemm(trans, noTrans, 1, general(r, D, D, V), general(r, D, D, Q), 1, general(D, D, D, N))
			gemm(trans, noTrans, -1, general(r, D, D, X), general(r, D, D, V), 1, general(D, D, D, N))
			symmetrize(N, D)
		} else {
			copy(N, M)
		}
		copy(rv, rprev)
		// f marginal: W = C_f P⁻, mean = C_f m⁻ + W r, cov = W C_fᵀ − W N Wᵀ.
		mp, pp := c.mp[n*D:(n+1)*D], c.pp[n*D*D:(n+1)*D*D]
		W := b.wf
		gemm(noTrans, noTrans, 1, general(np, D, D, cf), general(D, D, D, pp), 0, general(np, D, D, W))
		g1 := b.g1
		gemm(noTrans, noTrans, 1, general(np, D, D, W), general(D, D, D, N), 0, general(np, D, D, g1))
		mean := p.Mean[n*np : (n+1)*np]
		cov := p.Cov[n*np*np : (n+1)*np*np]
		for k := 0; k < np; k++ {
			var s float64
			row := cf[k*D : (k+1)*D]
			wk := W[k*D : (k+1)*D]
			for j := 0; j < D; j++ {
				s += row[j]*mp[j] + wk[j]*rv[j]
			}
			mean[k] = s
			for l := 0; l <= k; l++ {
				var v float64
				cl := cf[l*D : (l+1)*D]
				wl := W[l*D : (l+1)*D]
				gk := g1[k*D : (k+1)*D]
				for j := 0; j < D; j++ {
					v += wk[j]*cl[j] - gk[j]*wl[j]
				}
				cov[k*np+l], cov[l*np+k] = v, v
			}
			p.Var[n*np+k] = math.Max(cov[k*np+k], 0)
		}
	}
}
