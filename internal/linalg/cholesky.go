package linalg

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// Cholesky factorises the n×n symmetric matrix in a (lower triangle
// used) in place and reports success; the strict upper triangle is left
// as it was, as LAPACK's Potrf leaves it.
func Cholesky(a []float64, n int) bool {
	if n*n*n <= SmallOps {
		return CholeskySmall(a, n)
	}
	_, ok := lapack64.Potrf(blas64.Symmetric{N: n, Stride: n, Data: a, Uplo: blas.Lower})
	return ok
}

// CholeskySmall is Cholesky with plain loops at every size (as Potrf
// does, column by column), for blocks known to be small.
func CholeskySmall(a []float64, n int) bool {
	for j := 0; j < n; j++ {
		d := a[j*n+j]
		for k := 0; k < j; k++ {
			d -= a[j*n+k] * a[j*n+k]
		}
		if !(d > 0) {
			return false
		}
		d = math.Sqrt(d)
		a[j*n+j] = d
		for i := j + 1; i < n; i++ {
			s := a[i*n+j]
			for k := 0; k < j; k++ {
				s -= a[i*n+k] * a[j*n+k]
			}
			a[i*n+j] = s / d
		}
	}
	return true
}

// CholeskySym writes the lower Cholesky factor of the symmetric part
// (a + aᵀ)/2 of the n×n a into l (upper triangle zeroed) and reports
// whether it is numerically positive definite. a is not modified; a and l
// must not alias.
func CholeskySym(l, a []float64, n int) bool {
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			l[i*n+j] = 0.5 * (a[i*n+j] + a[j*n+i])
		}
		clear(l[i*n+i+1 : (i+1)*n])
	}
	return CholeskySmall(l, n)
}

// lower views the n×n lower-triangular factor stored in a.
func lower(a []float64, n int) blas64.Triangular {
	return blas64.Triangular{N: n, Stride: n, Data: a, Uplo: blas.Lower, Diag: blas.NonUnit}
}

// TrsmLower overwrites the n×k row-major b (stride ldb) with L⁻¹·b for the
// lower Cholesky factor L (n×n) in l.
func TrsmLower(l []float64, n int, b []float64, k, ldb int) {
	if n*n*k > SmallOps {
		blas64.Trsm(blas.Left, blas.NoTrans, 1, lower(l, n), General(n, k, ldb, b))
		return
	}
	trsmSmall(l, n, b, k, ldb, false)
}

// TrsmLowerT overwrites the n×k b with L⁻ᵀ·b.
func TrsmLowerT(l []float64, n int, b []float64, k, ldb int) {
	if n*n*k > SmallOps {
		blas64.Trsm(blas.Left, blas.Trans, 1, lower(l, n), General(n, k, ldb, b))
		return
	}
	trsmSmall(l, n, b, k, ldb, true)
}

// trsmSmall is the triangular solve with plain loops, skipping zeros of
// L: forward substitution with L, or with trans back substitution with
// Lᵀ (row i then takes the rows p > i, through L's column i).
func trsmSmall(l []float64, n int, b []float64, k, ldb int, trans bool) {
	for s := 0; s < n; s++ {
		i, lo, hi := s, 0, s
		if trans {
			i = n - 1 - s
			lo, hi = i+1, n
		}
		bi := b[i*ldb : i*ldb+k]
		for p := lo; p < hi; p++ {
			lip := l[i*n+p]
			if trans {
				lip = l[p*n+i]
			}
			if lip == 0 {
				continue
			}
			bp := b[p*ldb : p*ldb+k]
			for j := range bi {
				bi[j] -= lip * bp[j]
			}
		}
		inv := 1 / l[i*n+i]
		for j := range bi {
			bi[j] *= inv
		}
	}
}

// PSDSolve overwrites b (n×k) with A⁺·b for a symmetric positive
// semi-definite A (n×n, not modified) using its eigendecomposition,
// dropping eigenvalues below a relative threshold. It allocates. It is the fallback when
// Cholesky fails on a numerically singular covariance (e.g. purely
// periodic states, where Q = 0).
func PSDSolve(a []float64, n int, b []float64, k int) bool {
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
