package cvi

import (
	"errors"

	"gonum.org/v1/gonum/mat"

	"github.com/dcgpd/dcgpd/internal/linalg"
)

// eigenScaled returns the eigenvalues (ascending) and eigenvectors
// (columns) of scale times the symmetric part of the n×n row-major a: the
// rare fallback where a Cholesky factor (linalg.CholeskySym) does not
// exist. It takes LAPACK's route at every n, as CVI always has, so that
// its results do not move with the filter's small-matrix Jacobi route.
func eigenScaled(a []float64, n int, scale float64) ([]float64, *mat.Dense, error) {
	sym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			sym.SetSym(i, j, scale*0.5*(a[i*n+j]+a[j*n+i]))
		}
	}
	vals := make([]float64, n)
	vecs, ok := linalg.EigenSym(sym, vals)
	if !ok {
		return nil, nil, errors.New("eigendecomposition failed")
	}
	return vals, vecs, nil
}
