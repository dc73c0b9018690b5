package linalg

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// jacobiMax is the largest order SymEigen solves by Jacobi rotations; site
// blocks are N_p×N_p, so larger ones are rare and go to LAPACK.
const jacobiMax = 16

// SymEigen writes the eigenvalues of the symmetric n×n row-major matrix a
// in ascending order into vals and the matching unit eigenvectors into the
// columns of vecs (row-major n×n: vecs[i·n+c] is component i of vector c).
// a is overwritten. It reports false if the decomposition failed. For
// n <= jacobiMax it allocates nothing.
func SymEigen(a []float64, n int, vals, vecs []float64) bool {
	if n > jacobiMax {
		return SymEigenLAPACK(a, n, vals, vecs)
	}
	if !jacobiEigen(a, n, vecs) {
		return false
	}
	for i := 0; i < n; i++ {
		vals[i] = a[i*n+i]
	}
	// Insertion sort, ascending like LAPACK, moving vector columns along.
	for i := 1; i < n; i++ {
		for j := i; j > 0 && vals[j] < vals[j-1]; j-- {
			vals[j], vals[j-1] = vals[j-1], vals[j]
			for r := 0; r < n; r++ {
				vecs[r*n+j], vecs[r*n+j-1] = vecs[r*n+j-1], vecs[r*n+j]
			}
		}
	}
	return true
}

// jacobiEigen diagonalises the symmetric a in place by cyclic Jacobi
// rotations (Rutishauser's formulation), accumulating them into v. It
// stops when every off-diagonal entry is negligible against its diagonal
// pair (which keeps small eigenvalues of a semi-definite matrix accurate
// relative to themselves) or against the matrix' norm.
func jacobiEigen(a []float64, n int, v []float64) bool {
	SetIdentity(v, n)
	var norm float64
	for _, x := range a[:n*n] {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
		norm = math.Max(norm, math.Abs(x))
	}
	const eps = 0x1p-53
	floor := eps * eps * norm
	for sweep := 0; sweep < 64; sweep++ {
		rotated := false
		for p := 0; p < n-1; p++ {
			for q := p + 1; q < n; q++ {
				apq := a[p*n+q]
				if apq == 0 {
					continue
				}
				app, aqq := a[p*n+p], a[q*n+q]
				if math.Abs(apq) <= floor || math.Abs(apq) <= eps*math.Sqrt(math.Abs(app*aqq)) {
					a[p*n+q], a[q*n+p] = 0, 0
					continue
				}
				rotated = true
				theta := (aqq - app) / (2 * apq)
				t := 1 / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				if math.IsInf(theta*theta, 0) {
					t = 0.5 / math.Abs(theta)
				}
				if theta < 0 {
					t = -t
				}
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				tau := s / (1 + c)
				a[p*n+p] = app - t*apq
				a[q*n+q] = aqq + t*apq
				a[p*n+q], a[q*n+p] = 0, 0
				for r := 0; r < n; r++ {
					if r != p && r != q {
						g, h := a[r*n+p], a[r*n+q]
						g, h = g-s*(h+g*tau), h+s*(g-h*tau)
						a[r*n+p], a[p*n+r] = g, g
						a[r*n+q], a[q*n+r] = h, h
					}
					g, h := v[r*n+p], v[r*n+q]
					v[r*n+p], v[r*n+q] = g-s*(h+g*tau), h+s*(g-h*tau)
				}
			}
		}
		if !rotated {
			return true
		}
	}
	return false
}

// SymEigenLAPACK is SymEigen through gonum's LAPACK route at every n; it
// reads the upper triangle of a (not modified) and allocates. SymEigen
// takes it above jacobiMax.
func SymEigenLAPACK(a []float64, n int, vals, vecs []float64) bool {
	sym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			sym.SetSym(i, j, a[i*n+j])
		}
	}
	ev, ok := EigenSym(sym, vals[:n])
	if !ok {
		return false
	}
	for i := 0; i < n; i++ {
		for c := 0; c < n; c++ {
			vecs[i*n+c] = ev.At(i, c)
		}
	}
	return true
}

// EigenSym decomposes the gonum symmetric matrix a by LAPACK: the
// eigenvalues in ascending order into vals (length a's order) and the
// matching unit eigenvectors as the columns of the returned matrix. It
// reports false if the decomposition failed.
func EigenSym(a *mat.SymDense, vals []float64) (*mat.Dense, bool) {
	var eig mat.EigenSym
	if !eig.Factorize(a, true) {
		return nil, false
	}
	eig.Values(vals)
	var ev mat.Dense
	eig.VectorsTo(&ev)
	return &ev, true
}
