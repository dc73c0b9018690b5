package cvi

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Allocation-free kernels for the tiny (N_p×N_p) symmetric blocks that CVI
// handles once per bin and step; the gonum routines they replace allocate
// their workspaces on every call, which dominated at N_p of 2 or 3.

// cholInto writes the lower Cholesky factor of the symmetric part of the
// n×n row-major a into l (upper triangle zeroed) and reports whether a is
// numerically positive definite. a and l must not alias.
func cholInto(l, a []float64, n int) bool {
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			s := 0.5 * (a[i*n+j] + a[j*n+i])
			for k := 0; k < j; k++ {
				s -= l[i*n+k] * l[j*n+k]
			}
			if i == j {
				if !(s > 0) {
					return false
				}
				l[i*n+i] = math.Sqrt(s)
				continue
			}
			l[i*n+j] = s / l[j*n+j]
		}
		for j := i + 1; j < n; j++ {
			l[i*n+j] = 0
		}
	}
	return true
}

// resize returns s with length n, reallocating only when cap is short.
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// symEigen returns the eigenvalues and eigenvectors (columns) of scale
// times the symmetric part of the n×n row-major a, by gonum: the rare
// fallback where the Cholesky fast paths above do not apply.
func symEigen(a []float64, n int, scale float64) ([]float64, *mat.Dense, error) {
	sym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			sym.SetSym(i, j, scale*0.5*(a[i*n+j]+a[j*n+i]))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return nil, nil, errors.New("eigendecomposition failed")
	}
	var v mat.Dense
	eig.VectorsTo(&v)
	return eig.Values(nil), &v, nil
}
