package synth

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// matern32 is the Matérn-3/2 covariance s(1+√3τ/ℓ)exp(−√3τ/ℓ).
func matern32(tau, s, ell float64) float64 {
	r := math.Sqrt(3) * math.Abs(tau) / ell
	return s * (1 + r) * math.Exp(-r)
}

// periodic is the exp-sine-squared covariance s·exp(−2 sin²(πτ/p)/ℓ²),
// evaluated exactly (the reference's state-space form truncates its cosine
// series at J=6, which loses ~1e−6 of the variance).
func periodic(tau, s, ell, p float64) float64 {
	sn := math.Sin(math.Pi * tau / p)
	return s * math.Exp(-2*sn*sn/(ell*ell))
}

// gpDraws returns n independent draws of a zero-mean GP with stationary
// covariance k at times t, as out[time][draw], via a dense Cholesky factor
// of the Gram matrix. The jitter starts tiny and grows tenfold until the
// factorisation succeeds (the smooth kernels here are numerically rank
// deficient on a dense grid).
func gpDraws(r *rand.Rand, t []float64, k func(tau float64) float64, n int) ([][]float64, error) {
	m := len(t)
	gram := mat.NewSymDense(m, nil)
	for i := range m {
		for j := i; j < m; j++ {
			gram.SetSym(i, j, k(t[i]-t[j]))
		}
	}
	var chol mat.Cholesky
	scale := k(0)
	ok := false
	for jitter := 1e-10 * scale; jitter <= 1e-3*scale; jitter *= 10 {
		for i := range m {
			gram.SetSym(i, i, k(0)+jitter)
		}
		if ok = chol.Factorize(gram); ok {
			break
		}
	}
	if !ok {
		return nil, fmt.Errorf("synth: GP covariance on %d points not positive definite even with jitter", m)
	}
	var l mat.TriDense
	chol.LTo(&l)
	out := newMatrix(m, n)
	z := make([]float64, m)
	for d := range n {
		for i := range z {
			z[i] = r.NormFloat64()
		}
		for i := range m {
			s := 0.0
			for j := 0; j <= i; j++ {
				s += l.At(i, j) * z[j]
			}
			out[i][d] = s
		}
	}
	return out, nil
}

// matern32Path draws one Matérn-3/2 path (variance s, lengthscale ell) on a
// regular grid of n points with spacing dt, exactly, through its 2-state
// SDE discretisation: O(n) instead of a dense Cholesky.
func matern32Path(r *rand.Rand, n int, dt, s, ell float64) []float64 {
	lam := math.Sqrt(3) / ell
	e := math.Exp(-lam * dt)
	a := [2][2]float64{{e * (1 + lam*dt), e * dt}, {-e * lam * lam * dt, e * (1 - lam*dt)}}
	pinf := [2]float64{s, lam * lam * s} // diagonal stationary covariance
	// Q = Pinf − A Pinf Aᵀ, then its 2×2 Cholesky factor.
	q00 := pinf[0] - (a[0][0]*a[0][0]*pinf[0] + a[0][1]*a[0][1]*pinf[1])
	q01 := -(a[0][0]*a[1][0]*pinf[0] + a[0][1]*a[1][1]*pinf[1])
	q11 := pinf[1] - (a[1][0]*a[1][0]*pinf[0] + a[1][1]*a[1][1]*pinf[1])
	l00 := math.Sqrt(math.Max(q00, 0))
	l10 := 0.0
	if l00 > 0 {
		l10 = q01 / l00
	}
	l11 := math.Sqrt(math.Max(q11-l10*l10, 0))
	x0 := math.Sqrt(pinf[0]) * r.NormFloat64()
	x1 := math.Sqrt(pinf[1]) * r.NormFloat64()
	out := make([]float64, n)
	for i := range out {
		if i > 0 {
			z0, z1 := r.NormFloat64(), r.NormFloat64()
			x0, x1 = a[0][0]*x0+a[0][1]*x1+l00*z0, a[1][0]*x0+a[1][1]*x1+l10*z0+l11*z1
		}
		out[i] = x0
	}
	return out
}
