package linalg

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// SmallOps is the size (m·n·k multiply-adds) up to which hand-written
// loops beat BLAS calls, whose per-call overhead dominates tiny matrices
// (a Matérn-5/2 chain is 3×3, the stacked chains of Dataset A 6×6).
const SmallOps = 16 * 16 * 16

// General views a row-major r×c matrix with the given stride.
func General(r, c, stride int, data []float64) blas64.General {
	return blas64.General{Rows: r, Cols: c, Stride: stride, Data: data}
}

// Gemm computes c = alpha·op(a)·op(b) + beta·c on row-major views: plain
// loops that skip zeros of op(a) for small products, BLAS otherwise.
func Gemm(ta, tb blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	k := a.Cols
	if ta == blas.Trans {
		k = a.Rows
	}
	if c.Rows*c.Cols*k <= SmallOps {
		gemmSmall(ta, tb, alpha, a, b, beta, c)
		return
	}
	blas64.Gemm(ta, tb, alpha, a, b, beta, c)
}

// gemmSmall is Gemm with plain loops, skipping zeros of op(a): the
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

// Symmetrize replaces the row-major n×n matrix a by (a + aᵀ)/2.
func Symmetrize(a []float64, n int) {
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			v := 0.5 * (a[i*n+j] + a[j*n+i])
			a[i*n+j], a[j*n+i] = v, v
		}
	}
}

// MatMul writes c = a·b for row-major a (m×k) and b (k×n).
func MatMul(c, a, b []float64, m, k, n int) {
	for i := 0; i < m; i++ {
		ci := c[i*n : i*n+n]
		for j := range ci {
			ci[j] = 0
		}
		for l := 0; l < k; l++ {
			ail := a[i*k+l]
			if ail == 0 {
				continue
			}
			bl := b[l*n : l*n+n]
			for j, v := range bl {
				ci[j] += ail * v
			}
		}
	}
}

// Resize returns s with length n, reallocating only when cap is short.
func Resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// SetIdentity writes the n×n identity into a.
func SetIdentity(a []float64, n int) {
	for i := range a[:n*n] {
		a[i] = 0
	}
	for i := 0; i < n; i++ {
		a[i*n+i] = 1
	}
}

// Finite reports whether every element of a is finite.
func Finite(a []float64) bool {
	// v − v is 0 for a finite v and NaN for ±Inf and NaN, and a NaN stays
	// in the sum: one subtraction and one addition per entry, no branch.
	var s float64
	for _, v := range a {
		s += v - v
	}
	return s == 0
}
