package linalg

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// withEigenvalues returns Q·diag(lam)·Qᵀ for a random Householder
// reflection Q = I − 2vvᵀ/(vᵀv): a symmetric matrix with known spectrum.
func withEigenvalues(rng *rand.Rand, lam []float64) []float64 {
	n := len(lam)
	v := make([]float64, n)
	var vv float64
	for i := range v {
		v[i] = rng.NormFloat64()
		vv += v[i] * v[i]
	}
	q := make([]float64, n*n)
	SetIdentity(q, n)
	for i := range n {
		for j := range n {
			q[i*n+j] -= 2 * v[i] * v[j] / vv
		}
	}
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			for k, l := range lam {
				a[i*n+j] += q[i*n+k] * l * q[j*n+k]
			}
		}
	}
	Symmetrize(a, n)
	return a
}

func TestSymEigen(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	for _, n := range []int{1, 2, 3, 5, 8, 16, 20} {
		for _, rank := range []int{n, max(n-1, 1), 1} {
			lam := make([]float64, n)
			for i := range rank {
				lam[i] = 0.1 + rng.Float64()
				if rank == n && i%2 == 1 {
					lam[i] = -lam[i] // indefinite at full rank
				}
			}
			a := withEigenvalues(rng, lam)
			slices.Sort(lam)
			for route, eig := range map[string]func(a []float64, n int, vals, vecs []float64) bool{"SymEigen": SymEigen, "SymEigenLAPACK": SymEigenLAPACK} {
				work := slices.Clone(a)
				vals, vecs := make([]float64, n), make([]float64, n*n)
				if !eig(work, n, vals, vecs) {
					t.Fatalf("%s n=%d: no decomposition", route, n)
				}
				for i := range vals {
					if math.Abs(vals[i]-lam[i]) > 1e-13*float64(n) {
						t.Errorf("%s n=%d rank %d: eigenvalue %d = %v, want %v", route, n, rank, i, vals[i], lam[i])
					}
				}
				// A·v = λ·v and VᵀV = I.
				av, vtv := make([]float64, n*n), make([]float64, n*n)
				Gemm(blas.NoTrans, blas.NoTrans, 1, General(n, n, n, a), General(n, n, n, vecs), 0, General(n, n, n, av))
				Gemm(blas.Trans, blas.NoTrans, 1, General(n, n, n, vecs), General(n, n, n, vecs), 0, General(n, n, n, vtv))
				for i := range n {
					for c := range n {
						if d := av[i*n+c] - vals[c]*vecs[i*n+c]; math.Abs(d) > 1e-12*float64(n) {
							t.Fatalf("%s n=%d: A·v ≠ λ·v for eigenpair %d", route, n, c)
						}
						want := 0.0
						if i == c {
							want = 1
						}
						if math.Abs(vtv[i*n+c]-want) > 1e-12*float64(n) {
							t.Fatalf("%s n=%d: eigenvectors not orthonormal (%d,%d): %v", route, n, i, c, vtv[i*n+c])
						}
					}
				}
			}
		}
	}
	if SymEigen([]float64{1, math.NaN(), math.NaN(), 1}, 2, make([]float64, 2), make([]float64, 4)) {
		t.Error("NaN matrix decomposed")
	}
}

// TestCholesky: the three routes give the same factor to the last bit on
// symmetric input, L·Lᵀ reproduces the matrix, and indefinite or NaN
// input is refused.
func TestCholesky(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2))
	for _, n := range []int{1, 2, 3, 6, 16, 17, 30} {
		lam := make([]float64, n)
		for i := range lam {
			lam[i] = 0.5 + rng.Float64()
		}
		a := withEigenvalues(rng, lam)
		small := slices.Clone(a)
		if !CholeskySmall(small, n) {
			t.Fatalf("n=%d: positive definite matrix refused", n)
		}
		sym := make([]float64, n*n)
		if !CholeskySym(sym, a, n) {
			t.Fatalf("n=%d: CholeskySym refused", n)
		}
		lapack := slices.Clone(a)
		if !Cholesky(lapack, n) {
			t.Fatalf("n=%d: Cholesky refused", n)
		}
		for i := range n {
			for j := range n {
				if j > i {
					if sym[i*n+j] != 0 || small[i*n+j] != a[i*n+j] {
						t.Fatalf("n=%d: upper triangle (%d,%d) not as documented", n, i, j)
					}
					continue
				}
				if sym[i*n+j] != small[i*n+j] {
					t.Errorf("n=%d: CholeskySym and CholeskySmall differ at (%d,%d)", n, i, j)
				}
				if math.Abs(lapack[i*n+j]-small[i*n+j]) > 1e-13 {
					t.Errorf("n=%d: LAPACK and loops differ at (%d,%d): %v, %v", n, i, j, lapack[i*n+j], small[i*n+j])
				}
			}
		}
		llt := make([]float64, n*n)
		Gemm(blas.NoTrans, blas.Trans, 1, General(n, n, n, sym), General(n, n, n, sym), 0, General(n, n, n, llt))
		for i := range llt {
			if math.Abs(llt[i]-a[i]) > 1e-13 {
				t.Fatalf("n=%d: L·Lᵀ[%d] = %v, want %v", n, i, llt[i], a[i])
			}
		}
		// Solves: L⁻ᵀ·L⁻¹·a = I.
		x := slices.Clone(a)
		TrsmLower(sym, n, x, n, n)
		TrsmLowerT(sym, n, x, n, n)
		for i := range n {
			for j := range n {
				want := 0.0
				if i == j {
					want = 1
				}
				if math.Abs(x[i*n+j]-want) > 1e-12 {
					t.Fatalf("n=%d: A⁻¹A[%d,%d] = %v", n, i, j, x[i*n+j])
				}
			}
		}
	}
	l := make([]float64, 4)
	if CholeskySym(l, []float64{1, 2, 2, 1}, 2) || CholeskySmall([]float64{1, 2, 2, 1}, 2) {
		t.Error("indefinite matrix accepted")
	}
	if CholeskySym(l, []float64{math.NaN(), 0, 0, 1}, 2) {
		t.Error("NaN accepted")
	}
	// The symmetric part is what is factored.
	if !CholeskySym(l, []float64{4, 1, 3, 5}, 2) || l[0] != 2 || l[2] != 1 {
		t.Errorf("factor of the symmetric part: %v", l)
	}
}

// TestPSDSolve: on a singular PSD matrix the solve is the pseudo-inverse's.
func TestPSDSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	a := withEigenvalues(rng, []float64{0, 2, 4})
	b := make([]float64, 3)
	Gemm(blas.NoTrans, blas.NoTrans, 1, General(3, 3, 3, a), General(3, 1, 1, []float64{1, -1, 0.5}), 0, General(3, 1, 1, b))
	x := slices.Clone(b)
	if !PSDSolve(a, 3, x, 1) {
		t.Fatal("PSDSolve failed")
	}
	// A·x = b for b in A's range.
	ax := make([]float64, 3)
	Gemm(blas.NoTrans, blas.NoTrans, 1, General(3, 3, 3, a), General(3, 1, 1, x), 0, General(3, 1, 1, ax))
	for i := range ax {
		if math.Abs(ax[i]-b[i]) > 1e-12 {
			t.Errorf("A·A⁺b = %v, want %v", ax, b)
			break
		}
	}
}

func TestFiniteResize(t *testing.T) {
	if !Finite([]float64{1, -2, 0}) || Finite([]float64{1, math.Inf(-1)}) || Finite([]float64{math.NaN()}) {
		t.Error("Finite")
	}
	s := make([]float64, 3, 8)
	if r := Resize(s, 6); len(r) != 6 || &r[0] != &s[0] {
		t.Error("Resize reallocated within capacity")
	}
	if r := Resize(s, 9); len(r) != 9 {
		t.Error("Resize length")
	}
}
