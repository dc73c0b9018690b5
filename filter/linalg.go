package filter

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// general views a row-major r×c matrix with the given stride.
func general(r, c, stride int, data []float64) blas64.General {
	return blas64.General{Rows: r, Cols: c, Stride: stride, Data: data}
}

// gemm computes c = alpha·op(a)·op(b) + beta·c on row-major views.
func gemm(ta, tb blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	blas64.Gemm(ta, tb, alpha, a, b, beta, c)
}

// cholesky factorises the n×n symmetric matrix in a (lower triangle
// used) in place and reports success.
func cholesky(a []float64, n int) bool {
	_, ok := lapack64.Potrf(blas64.Symmetric{N: n, Stride: n, Data: a, Uplo: blas.Lower})
	return ok
}

// lower views the n×n lower-triangular factor stored in a.
func lower(a []float64, n int) blas64.Triangular {
	return blas64.Triangular{N: n, Stride: n, Data: a, Uplo: blas.Lower, Diag: blas.NonUnit}
}

// copySym copies an n×n matrix and reports whether it is finite.
func finite(a []float64) bool {
	for _, v := range a {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// psdSolveInPlace overwrites b (n×k) with A⁺·b for a symmetric positive
// semi-definite A (n×n, not modified) using its eigendecomposition,
// dropping eigenvalues below a relative threshold. It is the fallback when
// Cholesky fails on a numerically singular covariance (e.g. purely
// periodic states, where Q = 0).
func psdSolveInPlace(a []float64, n int, b []float64, k int) bool {
	sym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			sym.SetSym(i, j, 0.5*(a[i*n+j]+a[j*n+i]))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return false
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	maxv := 0.0
	for _, v := range vals {
		maxv = math.Max(maxv, math.Abs(v))
	}
	tol := maxv * float64(n) * 1e-13
	bm := mat.NewDense(n, k, b)
	var vtb mat.Dense
	vtb.Mul(vecs.T(), bm)
	for i, v := range vals {
		s := 0.0
		if v > tol {
			s = 1 / v
		}
		for j := 0; j < k; j++ {
			vtb.Set(i, j, vtb.At(i, j)*s)
		}
	}
	bm.Mul(&vecs, &vtb)
	return true
}
