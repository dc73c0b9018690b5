package cvi

import (
	"math"
	"slices"

	"github.com/dcgpd/dcgpd/diffusion"
)

// symSparse is a symmetric N×N matrix with a fixed sparsity pattern: its
// lower triangle, diagonal included, in compressed sparse rows with the
// columns of each row ascending (so the diagonal is each row's last entry).
type symSparse struct {
	n      int
	rowPtr []int
	col    []int
	val    []float64
}

// find returns the position of entry (i, j), i >= j, or -1 when it is not
// in the pattern.
func (s *symSparse) find(i, j int) int {
	lo, hi := s.rowPtr[i], s.rowPtr[i+1]
	if p, ok := slices.BinarySearch(s.col[lo:hi], j); ok {
		return lo + p
	}
	return -1
}

// diag returns the position of entry (i, i).
func (s *symSparse) diag(i int) int { return s.rowPtr[i+1] - 1 }

// coupledPattern is where the mean-field diffusion expectation's
// Gauss–Newton curvature can be non-zero, and where each term of its
// chain rule lands (see Diffusion.mfChainSparse): (a, b) is in the
// pattern when a = b, T_ab ≠ 0 or T_ba ≠ 0 (a cross term), or rows a and
// b of T share a column (the excess block). It depends on T's structure
// only, which masking keeps, so one pattern serves every bin.
type coupledPattern struct {
	src      *diffusion.Transition // the transition whose structure it is
	curv     symSparse
	rowStart []int   // per row of T: the index of its first entry
	posT     []int32 // per entry (a, k) of T: the position of (max, min)
	colIdx   []int32 // per entry of T: its index within its column
	colPtr   []int   // per column k: its entries' slots in colRow
	colRow   []int   // the rows of each column, ascending
	colEnt   []int32 // per column slot: the entry of T
	pairPtr  []int   // per column: the start of its triangle in pairPos
	pairPos  []int32 // per column, pair (i >= j) of its entries: the position of (row_i, row_j)
	pairEnt  []int32 // per pair: its two entries of T (i's, then j's)
	// The sums over the points before the bin's T multiplies them in
	// (Diffusion.mfChainSparse): Σ c·∂²log p per product, Σ c_k·h_k per
	// entry of T, Σ h_k per pair of a column.
	diagAcc, crossAcc, pairAcc []float64
}

// newCoupledPattern builds the pattern of T's structure.
func newCoupledPattern(t *diffusion.Transition) *coupledPattern {
	n := t.N()
	p := &coupledPattern{src: t, rowStart: make([]int, n+1)}
	// T's transpose: the rows of each column, ascending.
	cnt := make([]int, n+1)
	for a := 0; a < n; a++ {
		cols, _ := t.Row(a)
		p.rowStart[a+1] = p.rowStart[a] + len(cols)
		for _, k := range cols {
			cnt[k+1]++
		}
	}
	nnz := p.rowStart[n]
	p.colPtr = make([]int, n+1)
	for k := 0; k < n; k++ {
		p.colPtr[k+1] = p.colPtr[k] + cnt[k+1]
	}
	p.colRow, p.colIdx, p.colEnt = make([]int, nnz), make([]int32, nnz), make([]int32, nnz)
	fill := append([]int(nil), p.colPtr[:n]...)
	for a := 0; a < n; a++ {
		cols, _ := t.Row(a)
		for q, k := range cols {
			p.colIdx[p.rowStart[a]+q] = int32(fill[k] - p.colPtr[k])
			p.colRow[fill[k]] = a
			p.colEnt[fill[k]] = int32(p.rowStart[a] + q)
			fill[k]++
		}
	}
	p.buildCurv(t)
	p.posT = make([]int32, nnz)
	for a := 0; a < n; a++ {
		cols, _ := t.Row(a)
		for q, k := range cols {
			p.posT[p.rowStart[a]+q] = int32(p.curv.find(max(a, k), min(a, k)))
		}
	}
	p.pairPtr = make([]int, n+1)
	for k := 0; k < n; k++ {
		c := p.colPtr[k+1] - p.colPtr[k]
		p.pairPtr[k+1] = p.pairPtr[k] + c*(c+1)/2
	}
	p.pairPos = make([]int32, p.pairPtr[n])
	p.pairEnt = make([]int32, 2*p.pairPtr[n])
	p.diagAcc, p.crossAcc, p.pairAcc = make([]float64, n), make([]float64, nnz), make([]float64, p.pairPtr[n])
	for k := 0; k < n; k++ {
		rows := p.colRow[p.colPtr[k]:p.colPtr[k+1]]
		for i, ri := range rows {
			for j, rj := range rows[:i+1] {
				q := p.pairPtr[k] + i*(i+1)/2 + j
				p.pairPos[q] = int32(p.curv.find(ri, rj))
				p.pairEnt[2*q], p.pairEnt[2*q+1] = p.colEnt[p.colPtr[k]+i], p.colEnt[p.colPtr[k]+j]
			}
		}
	}
	return p
}

// buildCurv lays out the lower triangle of the pattern.
func (p *coupledPattern) buildCurv(t *diffusion.Transition) {
	n := t.N()
	s := &p.curv
	s.n, s.rowPtr = n, make([]int, n+1)
	mark := make([]int, n)
	for i := range mark {
		mark[i] = -1
	}
	var row []int
	add := func(a, b int) {
		if b <= a && mark[b] != a {
			mark[b] = a
			row = append(row, b)
		}
	}
	for a := 0; a < n; a++ {
		row = row[:0]
		cols, _ := t.Row(a)
		for _, k := range cols {
			add(a, k)
			for _, b := range p.colRow[p.colPtr[k]:p.colPtr[k+1]] {
				add(a, b)
			}
		}
		for _, b := range p.colRow[p.colPtr[a]:p.colPtr[a+1]] {
			add(a, b)
		}
		add(a, a)
		slices.Sort(row)
		s.col = append(s.col, row...)
		s.rowPtr[a+1] = len(s.col)
	}
	s.val = make([]float64, len(s.col))
}

// sparseNewton solves the online refinement's Newton system on the means
// of independent products, A·x = b over the observed products, with
// A = diag(dg) − offdiag(H) for the sparse curvature H, by conjugate
// gradients with a Jacobi preconditioner: A is symmetric positive
// definite (−H is a Gauss–Newton matrix and dg ≥ 1/p − H_kk), so the
// iteration converges to the solution the dense Cholesky factor gives,
// here to a relative residual of tol (0: cgTol).
type sparseNewton struct {
	tol            float64
	x, r, z, p, ap []float64
	obs            []int // the observed products, ascending
	// a: the off-diagonal entries of H that are non-zero between observed
	// products, in H's order. The pattern is T's structure; most of its
	// entries (pairs of products that cannot be in excess) stay zero, and
	// skipping them leaves every sum as it was.
	a symSparse
}

// compact fills w.a with h's non-zero off-diagonal entries between
// observed products (rows of w.a hold no diagonal).
func (w *sparseNewton) compact(h *symSparse, observed []bool) {
	a := &w.a
	a.n = h.n
	if len(a.rowPtr) != h.n+1 {
		a.rowPtr = make([]int, h.n+1)
	}
	if cap(a.col) < len(h.col) {
		// Room for the whole pattern: a warm bin allocates nothing.
		a.col, a.val = make([]int, 0, len(h.col)), make([]float64, 0, len(h.col))
	}
	a.col, a.val = a.col[:0], a.val[:0]
	for i := 0; i < h.n; i++ {
		if observed[i] {
			lo, hi := h.rowPtr[i], h.rowPtr[i+1]-1 // without the diagonal
			for q := lo; q < hi; q++ {
				if v, j := h.val[q], h.col[q]; v != 0 && observed[j] {
					a.col = append(a.col, j)
					a.val = append(a.val, v)
				}
			}
		}
		a.rowPtr[i+1] = len(a.col)
	}
}

// cgTol is the relative residual ‖b − A·x‖/‖b‖ at which the conjugate
// gradients stop by default. The solution is a Newton step of the
// refinement, whose next expectation corrects what the step left: a
// residual of 1e-6 moves the filtered means by less than 1e-6 sd, far
// below the refinement's own stopping test (0.05 sd), and takes 6.3
// iterations a solve on a 2,000-station city against 12.6 at cgTolExact
// (TestNewtonTolMatchesExact: within 5e-7 sd measured, 1e-5 asserted).
const cgTol = 1e-6

// cgTolExact is near the rounding of a direct solve: the reference the
// tests compare the default with, and the dense route's accuracy.
const cgTolExact = 1e-13

// solve overwrites b (N entries; only the observed ones are read) with
// the solution; ok is false when the iteration met a direction of
// non-positive curvature or did not converge, and b is then unchanged.
// The vectors are visited at the observed products only (a localised step
// observes a few dozen of thousands): the unobserved entries are zero
// throughout and every sum adds the same terms in the same order as over
// all N.
func (w *sparseNewton) solve(h *symSparse, dg, b []float64, observed []bool) bool {
	n := h.n
	for _, s := range []*[]float64{&w.x, &w.r, &w.z, &w.p, &w.ap} {
		if len(*s) != n {
			*s = make([]float64, n)
		}
	}
	if cap(w.obs) < n {
		w.obs = make([]int, 0, n)
	}
	x, r, z, p, ap := w.x, w.r, w.z, w.p, w.ap
	clear(x)
	clear(r)
	clear(z)
	clear(p)
	clear(ap)
	idx := w.obs[:0]
	var bb, rz float64
	for k := 0; k < n; k++ {
		if !observed[k] {
			continue
		}
		idx = append(idx, k)
		r[k] = b[k]
		z[k] = r[k] / dg[k]
		p[k] = z[k]
		bb += b[k] * b[k]
		rz += r[k] * z[k]
	}
	w.obs = idx
	if bb == 0 {
		clear(b)
		return true
	}
	tol := w.tol
	if tol == 0 {
		tol = cgTol
	}
	stop := tol * tol * bb
	w.compact(h, observed)
	for it := 0; it < 2*n+10; it++ {
		newtonMul(ap, &w.a, dg, p, idx)
		var pap float64
		for _, k := range idx {
			pap += p[k] * ap[k]
		}
		if !(pap > 0) {
			return false
		}
		alpha := rz / pap
		var rr, rzNew float64
		for _, k := range idx {
			x[k] += alpha * p[k]
			r[k] -= alpha * ap[k]
			z[k] = r[k] / dg[k]
			rr += r[k] * r[k]
			rzNew += r[k] * z[k]
		}
		if rr <= stop {
			copy(b, x)
			return true
		}
		if math.IsNaN(rr) {
			return false
		}
		beta := rzNew / rz
		rz = rzNew
		for _, k := range idx {
			p[k] = z[k] + beta*p[k]
		}
	}
	return false
}

// newtonMul writes y = A·x for A = diag(dg) − offdiag(H) restricted to
// the observed products idx (x and y are zero elsewhere), off holding H's
// off-diagonal entries between observed products (sparseNewton.compact).
func newtonMul(y []float64, off *symSparse, dg, x []float64, idx []int) {
	for _, k := range idx {
		y[k] = dg[k] * x[k]
	}
	for _, a := range idx {
		lo, hi := off.rowPtr[a], off.rowPtr[a+1]
		if lo == hi {
			continue
		}
		xa := x[a]
		var s float64
		for q, b := range off.col[lo:hi] {
			v := off.val[lo+q]
			s += v * x[b]
			y[b] -= v * xa
		}
		y[a] -= s
	}
}
