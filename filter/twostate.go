package filter

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// errNonFinite is a run whose log marginal likelihood is not finite.
var errNonFinite = fmt.Errorf("%w: the log marginal likelihood is not finite (extreme hyperparameters or sites?)", ErrNumerical)

// runTwoState is the Kalman filter and RTS smoother of one chain with a
// 2-dimensional state observed through H = [1, 0] by scalar sites (product
// k of sites with stride np): the Matérn-3/2 workhorse. It computes exactly
// what the dense path computes, unrolled over 2×2 matrices so that one
// filter+smoother step costs tens of nanoseconds instead of several BLAS
// calls. Results go to the chain's storage.
//
// The innovation log-determinants are accumulated as a product, with a
// logarithm every 16 observations: the log is the costliest operation of
// the step. mean and vari receive H·x and H·P·Hᵀ (stride np, offset k) of
// the smoothed, or, without smoothing, filtered moments. The first bin's
// prior is the stationary one, or the model's start st (chain k) predicted
// to it. The forward pass stays in one function (86 lines): its state is
// a handful of scalars the compiler keeps in registers across the step,
// which a helper per step would pass and return at every bin.
func runTwoState(c *chain, kern kernel.Temporal, times, nat1, nat2, mean, vari []float64, k, np int, smooth bool, st *modelStart) (float64, error) {
	var pinf, q [4]float64
	// ProcessNoise's scratch (3d² = 12), then the start's transition: one
	// array, so that the start costs no allocation of its own.
	var scratch [16]float64
	work, a0 := scratch[:12], scratch[12:]
	a := c.a
	var m0, m1, p00, p01, p11 float64
	if st != nil {
		// The start, to be predicted to the first bin through a0.
		sm, sp := st.chain(k)
		m0, m1, p00, p01, p11 = sm[0], sm[1], sp[0], sp[1], sp[3]
		kern.Transition(a0, times[0]-st.t0)
		kernel.ProcessNoise(kern, q[:], times[0]-st.t0, work)
	} else {
		kern.Stationary(pinf[:])
		p00, p01, p11 = pinf[0], pinf[1], pinf[3]
	}
	a[0], a[1], a[2], a[3] = 1, 0, 0, 1
	var ll float64
	prod, nprod := 1.0, 0
	prevDt := math.NaN()
	for n := range times {
		// The transition into bin n: from bin n−1, or from the start.
		var an []float64
		switch {
		case n > 0:
			dt := times[n] - times[n-1]
			an = a[4*n : 4*n+4]
			if dt == prevDt {
				copy(an, a[4*n-4:4*n])
			} else {
				kern.Transition(an, dt)
				kernel.ProcessNoise(kern, q[:], dt, work)
				prevDt = dt
			}
		case st != nil:
			an = a0
		}
		if an != nil {
			// x = A·x, P = A·P·Aᵀ + Q.
			a00, a01, a10, a11 := an[0], an[1], an[2], an[3]
			m0, m1 = a00*m0+a01*m1, a10*m0+a11*m1
			c00, c01 := a00*p00+a01*p01, a00*p01+a01*p11
			c10, c11 := a10*p00+a11*p01, a10*p01+a11*p11
			p00 = c00*a00 + c01*a01 + q[0]
			p01 = c00*a10 + c01*a11 + 0.5*(q[1]+q[2])
			p11 = c10*a10 + c11*a11 + q[3]
		}
		mp, pp := c.mp[2*n:2*n+2], c.pp[4*n:4*n+4]
		mp[0], mp[1] = m0, m1
		pp[0], pp[1], pp[2], pp[3] = p00, p01, p01, p11
		if l2 := nat2[n*np+k]; l2 > 0 {
			y, r := nat1[n*np+k]/l2, 1/l2
			v := y - m0
			s := p00 + r
			k0, k1 := p00/s, p01/s
			ll -= 0.5 * (log2Pi + v*v/s)
			prod *= s
			if nprod++; nprod == 16 {
				ll -= 0.5 * math.Log(prod)
				prod, nprod = 1, 0
			}
			m0 += k0 * v
			m1 += k1 * v
			p11 -= k1 * p01
			p01 -= k0 * p01
			p00 -= k0 * p00
		}
		mf, pf := c.mf[2*n:2*n+2], c.pf[4*n:4*n+4]
		mf[0], mf[1] = m0, m1
		pf[0], pf[1], pf[2], pf[3] = p00, p01, p01, p11
		if !smooth {
			mean[n*np+k], vari[n*np+k] = m0, p00
		}
	}
	ll -= 0.5 * math.Log(prod)
	if math.IsNaN(ll) || math.IsInf(ll, 0) {
		return ll, errNonFinite
	}
	if !smooth {
		return ll, nil
	}
	smoothTwoState(c, len(times), mean, vari, k, np)
	return ll, nil
}

// smoothTwoState is runTwoState's RTS backward pass over the chain's N
// filtered bins, unrolled likewise; it writes the smoothed states to the
// chain and H·x, H·P·Hᵀ to mean and vari (stride np, offset k).
func smoothTwoState(c *chain, N int, mean, vari []float64, k, np int) {
	a := c.a
	last := c.pf[4*N-4 : 4*N]
	s0, s1, s00, s01, s11 := c.mf[2*N-2], c.mf[2*N-1], last[0], last[1], last[3]
	ms, ps := c.ms, c.ps
	ms[2*N-2], ms[2*N-1] = s0, s1
	ps[4*N-4], ps[4*N-3], ps[4*N-2], ps[4*N-1] = s00, s01, s01, s11
	mean[(N-1)*np+k], vari[(N-1)*np+k] = s0, s00
	for n := N - 2; n >= 0; n-- {
		an := a[4*n+4 : 4*n+8]
		a00, a01, a10, a11 := an[0], an[1], an[2], an[3]
		pf := c.pf[4*n : 4*n+4]
		f00, f01, f11 := pf[0], pf[1], pf[3]
		mf := c.mf[2*n : 2*n+2]
		mp, pp := c.mp[2*n+2:2*n+4], c.pp[4*n+4:4*n+8]
		q00, q01, q11 := pp[0], pp[1], pp[3]
		// C = Pf Aᵀ, G = C·Pp⁻¹.
		c00, c01 := f00*a00+f01*a01, f00*a10+f01*a11
		c10, c11 := f01*a00+f11*a01, f01*a10+f11*a11
		det := q00*q11 - q01*q01
		i00, i01, i11 := q11/det, -q01/det, q00/det
		g00, g01 := c00*i00+c01*i01, c00*i01+c01*i11
		g10, g11 := c10*i00+c11*i01, c10*i01+c11*i11
		d0, d1 := s0-mp[0], s1-mp[1]
		s0 = mf[0] + g00*d0 + g01*d1
		s1 = mf[1] + g10*d0 + g11*d1
		e00, e01, e11 := s00-q00, s01-q01, s11-q11
		h00, h01 := g00*e00+g01*e01, g00*e01+g01*e11
		h10, h11 := g10*e00+g11*e01, g10*e01+g11*e11
		s00 = f00 + h00*g00 + h01*g01
		s01 = f01 + h00*g10 + h01*g11
		s11 = f11 + h10*g10 + h11*g11
		ms[2*n], ms[2*n+1] = s0, s1
		p := ps[4*n : 4*n+4]
		p[0], p[1], p[2], p[3] = s00, s01, s01, s11
		mean[n*np+k], vari[n*np+k] = s0, s00
	}
}
