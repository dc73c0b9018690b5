package diffusion

import (
	"math"
	"slices"
)

// kdLeaf is the size below which a subtree is scanned linearly.
const kdLeaf = 8

// kdTree is an implicit, balanced k-d tree over n points of dimension dim
// (row-major in pts). The subtree over perm[lo:hi] has its splitting point
// at mid = (lo+hi)/2, split along axis[mid]; points left of mid are <= it
// on that axis and points right of it are >=. Ranges of at most kdLeaf
// points are leaves.
type kdTree struct {
	dim  int
	pts  []float64
	perm []int
	axis []int
}

func newKDTree(pts []float64, n, dim int) *kdTree {
	t := &kdTree{dim: dim, pts: pts, perm: make([]int, n), axis: make([]int, n)}
	for i := range t.perm {
		t.perm[i] = i
	}
	t.build(0, n)
	return t
}

func (t *kdTree) build(lo, hi int) {
	if hi-lo <= kdLeaf {
		return
	}
	// Split along the axis of largest spread.
	best, spread := 0, -1.0
	for a := 0; a < t.dim; a++ {
		mn, mx := math.Inf(1), math.Inf(-1)
		for _, p := range t.perm[lo:hi] {
			v := t.pts[p*t.dim+a]
			mn, mx = math.Min(mn, v), math.Max(mx, v)
		}
		if mx-mn > spread {
			best, spread = a, mx-mn
		}
	}
	slices.SortFunc(t.perm[lo:hi], func(x, y int) int {
		vx, vy := t.pts[x*t.dim+best], t.pts[y*t.dim+best]
		switch {
		case vx < vy:
			return -1
		case vx > vy:
			return 1
		}
		return x - y
	})
	mid := (lo + hi) / 2
	t.axis[mid] = best
	t.build(lo, mid)
	t.build(mid+1, hi)
}

// nbrSet collects the neighbours of one query point: all points within
// squared radius r2 (k = 0), or the k nearest of them. Ties in distance are
// broken by index so the result does not depend on the tree's layout.
type nbrSet struct {
	k   int
	r2  float64
	d2  []float64 // a max-heap on (d2, idx) when k > 0
	idx []int
}

func (s *nbrSet) reset(k int, r2 float64) {
	s.k, s.r2 = k, r2
	s.d2, s.idx = s.d2[:0], s.idx[:0]
}

// bound is the squared distance beyond which nothing can enter the set.
func (s *nbrSet) bound() float64 {
	if s.k > 0 && len(s.d2) == s.k {
		return s.d2[0]
	}
	return s.r2
}

// less orders candidates by distance, then index.
func less(d1 float64, i1 int, d2 float64, i2 int) bool {
	return d1 < d2 || (d1 == d2 && i1 < i2)
}

func (s *nbrSet) offer(d2 float64, j int) {
	if !(d2 <= s.r2) {
		return
	}
	if s.k == 0 {
		s.d2, s.idx = append(s.d2, d2), append(s.idx, j)
		return
	}
	if len(s.d2) < s.k {
		s.d2, s.idx = append(s.d2, d2), append(s.idx, j)
		s.up(len(s.d2) - 1)
		return
	}
	if less(d2, j, s.d2[0], s.idx[0]) {
		s.d2[0], s.idx[0] = d2, j
		s.down(0)
	}
}

func (s *nbrSet) up(c int) {
	for c > 0 {
		p := (c - 1) / 2
		if !less(s.d2[p], s.idx[p], s.d2[c], s.idx[c]) {
			return
		}
		s.swap(p, c)
		c = p
	}
}

func (s *nbrSet) down(p int) {
	n := len(s.d2)
	for {
		c := 2*p + 1
		if c >= n {
			return
		}
		if c+1 < n && less(s.d2[c], s.idx[c], s.d2[c+1], s.idx[c+1]) {
			c++
		}
		if !less(s.d2[p], s.idx[p], s.d2[c], s.idx[c]) {
			return
		}
		s.swap(p, c)
		p = c
	}
}

func (s *nbrSet) swap(a, b int) {
	s.d2[a], s.d2[b] = s.d2[b], s.d2[a]
	s.idx[a], s.idx[b] = s.idx[b], s.idx[a]
}

// query fills s with the neighbours of point self (which is excluded).
func (t *kdTree) query(self int, s *nbrSet) {
	q := t.pts[self*t.dim : (self+1)*t.dim]
	t.search(q, self, s, 0, len(t.perm))
}

func (t *kdTree) dist2(q []float64, p int) float64 {
	var d float64
	for a, v := range t.pts[p*t.dim : (p+1)*t.dim] {
		x := q[a] - v
		d += x * x
	}
	return d
}

func (t *kdTree) search(q []float64, self int, s *nbrSet, lo, hi int) {
	if hi-lo <= kdLeaf {
		for _, p := range t.perm[lo:hi] {
			if p != self {
				s.offer(t.dist2(q, p), p)
			}
		}
		return
	}
	mid := (lo + hi) / 2
	p, a := t.perm[mid], t.axis[mid]
	if p != self {
		s.offer(t.dist2(q, p), p)
	}
	diff := q[a] - t.pts[p*t.dim+a]
	nlo, nhi, flo, fhi := lo, mid, mid+1, hi
	if diff > 0 {
		nlo, nhi, flo, fhi = mid+1, hi, lo, mid
	}
	t.search(q, self, s, nlo, nhi)
	// "<=" rather than "<": an equally distant point with a smaller index
	// may still be on the far side.
	if diff*diff <= s.bound() {
		t.search(q, self, s, flo, fhi)
	}
}
