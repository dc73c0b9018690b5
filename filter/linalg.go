package filter

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

const (
	noTrans = blas.NoTrans
	trans   = blas.Trans
)

// general views a row-major r×c matrix with the given stride.
func general(r, c, stride int, data []float64) blas64.General {
	return blas64.General{Rows: r, Cols: c, Stride: stride, Data: data}
}

// gemm computes c = alpha·op(a)·op(b) + beta·c on row-major views.
func gemm(ta, tb blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	k := a.Cols
	if ta == blas.Trans {
		k = a.Rows
	}
	if c.Rows*c.Cols*k <= smallOps {
		gemmSmall(ta, tb, alpha, a, b, beta, c)
		return
	}
	blas64.Gemm(ta, tb, alpha, a, b, beta, c)
}

// cholesky factorises the n×n symmetric matrix in a (lower triangle
// used) in place and reports success.
func cholesky(a []float64, n int) bool {
	if n*n*n <= smallOps {
		return choleskySmall(a, n)
	}
	_, ok := lapack64.Potrf(blas64.Symmetric{N: n, Stride: n, Data: a, Uplo: blas.Lower})
	return ok
}

// lower views the n×n lower-triangular factor stored in a.
func lower(a []float64, n int) blas64.Triangular {
	return blas64.Triangular{N: n, Stride: n, Data: a, Uplo: blas.Lower, Diag: blas.NonUnit}
}

// finite reports whether every element of a is finite.
func finite(a []float64) bool {
	// v − v is 0 for a finite v and NaN for ±Inf and NaN, and a NaN stays
	// in the sum: one subtraction and one addition per entry, no branch.
	var s float64
	for _, v := range a {
		s += v - v
	}
	return s == 0
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

// smallOps is the size (m·n·k flops / 2) below which hand-written loops
// beat BLAS calls, whose per-call overhead dominates tiny matrices (a
// Matérn-5/2 chain is 3×3, the stacked chains of Dataset A 6×6).
const smallOps = 16 * 16 * 16

// gemmSmall is gemm with plain loops, skipping zeros of op(a): the
// transitions of periodic and summed kernels are mostly zero.
func gemmSmall(ta, tb blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	m, n := c.Rows, c.Cols
	k := a.Cols
	if ta == blas.Trans {
		k = a.Rows
	}
	for i := 0; i < m; i++ {
		ci := c.Data[i*c.Stride : i*c.Stride+n]
		if beta == 0 {
			clear(ci)
		} else if beta != 1 {
			for j := range ci {
				ci[j] *= beta
			}
		}
		for l := 0; l < k; l++ {
			var av float64
			if ta == blas.NoTrans {
				av = a.Data[i*a.Stride+l]
			} else {
				av = a.Data[l*a.Stride+i]
			}
			if av == 0 {
				continue
			}
			av *= alpha
			if tb == blas.NoTrans {
				bl := b.Data[l*b.Stride : l*b.Stride+n]
				for j, bv := range bl {
					ci[j] += av * bv
				}
			} else {
				for j := range ci {
					ci[j] += av * b.Data[j*b.Stride+l]
				}
			}
		}
	}
}

// choleskySmall factorises a row-major n×n matrix in place (lower
// triangle), as Potrf does.
func choleskySmall(a []float64, n int) bool {
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

// trsmLower overwrites the n×k row-major b (stride ldb) with L⁻¹·b.
func trsmLower(l []float64, n int, b []float64, k, ldb int) {
	if n*n*k > smallOps {
		blas64.Trsm(blas.Left, blas.NoTrans, 1, lower(l, n), general(n, k, ldb, b))
		return
	}
	for i := 0; i < n; i++ {
		bi := b[i*ldb : i*ldb+k]
		for p := 0; p < i; p++ {
			lip := l[i*n+p]
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

// trsmLowerT overwrites the n×k b with L⁻ᵀ·b.
func trsmLowerT(l []float64, n int, b []float64, k, ldb int) {
	if n*n*k > smallOps {
		blas64.Trsm(blas.Left, blas.Trans, 1, lower(l, n), general(n, k, ldb, b))
		return
	}
	for i := n - 1; i >= 0; i-- {
		bi := b[i*ldb : i*ldb+k]
		for p := i + 1; p < n; p++ {
			lpi := l[p*n+i]
			if lpi == 0 {
				continue
			}
			bp := b[p*ldb : p*ldb+k]
			for j := range bi {
				bi[j] -= lpi * bp[j]
			}
		}
		inv := 1 / l[i*n+i]
		for j := range bi {
			bi[j] *= inv
		}
	}
}

// logProd accumulates Σ log x_i over positive factors with few calls to
// math.Log, which costs as much as the rest of a small filter step: it
// multiplies the factors while their product stays well inside the
// floating-point range and takes a logarithm only when it would leave it.
// Non-positive or non-finite factors reach the sum as their logarithm.
// The zero value is an empty product.
type logProd struct {
	prod float64 // running product; 0 means 1
	sum  float64 // logarithms already taken
}

// mul multiplies x into the product.
func (l *logProd) mul(x float64) {
	if p := l.prod * x; p > 0x1p-500 && p < 0x1p500 {
		l.prod = p
		return
	}
	l.flush(x)
}

// flush is mul's slow path: the first factor, or one that would take the
// product out of range.
func (l *logProd) flush(x float64) {
	cur := l.prod
	if cur == 0 {
		cur = 1
	}
	if p := cur * x; p > 0x1p-500 && p < 0x1p500 {
		l.prod = p
		return
	}
	l.sum += math.Log(cur) + math.Log(x)
	l.prod = 1
}

// log returns the sum of the logarithms of the factors so far.
func (l *logProd) log() float64 {
	if l.prod == 0 {
		return l.sum
	}
	return l.sum + math.Log(l.prod)
}
