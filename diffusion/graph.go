package diffusion

import (
	"fmt"
	"math"
	"slices"

	"github.com/dcgpd/dcgpd/internal/geo"
)

// MaxDenseEdges bounds the size of a dense graph (about 8200 products,
// 1.6 GB with its transition matrix); larger ones need K or Cutoff.
const MaxDenseEdges = 1 << 26

// GraphOptions chooses the neighbourhood of each product. The zero value
// is the dense Euclidean graph (every product is a neighbour of every
// other).
type GraphOptions struct {
	// Metric measures distances between feature vectors.
	Metric Metric
	// K > 0 keeps only each product's K nearest other products (ties broken
	// by the lower index); 0 keeps all. The graph is directed: j may be
	// among i's nearest without i being among j's.
	K int
	// Cutoff > 0 keeps only neighbours at distance <= Cutoff, in the
	// metric's units (metres for GreatCircle); 0 means no cut-off. Combined
	// with K, both limits apply.
	Cutoff float64
}

// Graph is the fixed neighbourhood structure of N_p products: for each
// product (row) the sorted indices of its neighbours and the squared
// distances to them, in compressed sparse rows. It does not depend on the
// lengthscale, so one Graph serves every ℓ and π (see Graph.Transition).
type Graph struct {
	n      int
	metric Metric
	rowPtr []int     // row i's entries are [rowPtr[i], rowPtr[i+1])
	col    []int     // neighbour index per entry, ascending within a row
	dist2  []float64 // squared distance per entry
}

// NewGraph builds the neighbourhood graph of the products with the given
// feature vectors (one per product, all of the same dimension). K nearest
// or cut-off neighbours are found with a k-d tree (over unit vectors in 3-D
// for GreatCircle, whose chord length orders points like the great-circle
// distance): about O(log N_p + K) per product in low dimensions (10⁴
// products, K = 8: tens of milliseconds). The dense graph costs O(N_p²)
// and is limited to MaxDenseEdges edges.
func NewGraph(features [][]float64, opt GraphOptions) (*Graph, error) {
	dim, err := validateFeatures(opt.Metric, features)
	if err != nil {
		return nil, err
	}
	if opt.K < 0 {
		return nil, fmt.Errorf("diffusion: neighbour count K = %d is negative", opt.K)
	}
	if !(opt.Cutoff >= 0) {
		return nil, fmt.Errorf("diffusion: cut-off distance %v is not >= 0", opt.Cutoff)
	}
	n := len(features)
	g := &Graph{n: n, metric: opt.Metric, rowPtr: make([]int, n+1)}
	k := opt.K
	if k >= n-1 {
		k = 0 // K >= N_p−1 keeps everyone.
	}
	cut := opt.Cutoff
	if math.IsInf(cut, 1) {
		cut = 0
	}
	if k == 0 && cut == 0 {
		if n > 1 && n-1 > MaxDenseEdges/n {
			return nil, fmt.Errorf("diffusion: a dense graph over %d products would store %d edges (limit %d); set GraphOptions.K or Cutoff", n, n*(n-1), MaxDenseEdges)
		}
		g.buildDense(features)
		return g, nil
	}
	g.buildSparse(features, dim, k, cut)
	return g, nil
}

func (g *Graph) buildDense(features [][]float64) {
	n := g.n
	g.col = make([]int, 0, n*(n-1))
	g.dist2 = make([]float64, 0, n*(n-1))
	for i := range n {
		for j := range n {
			if j != i {
				g.col = append(g.col, j)
				g.dist2 = append(g.dist2, g.metric.SquaredDistance(features[i], features[j]))
			}
		}
		g.rowPtr[i+1] = len(g.col)
	}
}

func (g *Graph) buildSparse(features [][]float64, dim, k int, cut float64) {
	n := g.n
	// Search space: the features themselves, or points on the unit sphere,
	// whose chord length is monotone in the great-circle distance.
	var pts []float64
	r2 := math.Inf(1)
	if g.metric == GreatCircle {
		dim = 3
		pts = make([]float64, 3*n)
		for i, p := range features {
			la, lo := p[0]*math.Pi/180, p[1]*math.Pi/180
			pts[3*i], pts[3*i+1], pts[3*i+2] = math.Cos(la)*math.Cos(lo), math.Cos(la)*math.Sin(lo), math.Sin(la)
		}
		if cut > 0 && cut/geo.EarthRadius < math.Pi {
			c := 2 * math.Sin(cut/geo.EarthRadius/2)
			r2 = c * c * (1 + 1e-9) // generous: the exact test follows
		}
	} else {
		pts = make([]float64, dim*n)
		for i, p := range features {
			copy(pts[dim*i:], p)
		}
		if cut > 0 {
			r2 = cut * cut
		}
	}
	tree := newKDTree(pts, n, dim)
	var set nbrSet
	type nbr struct {
		j  int
		d2 float64
	}
	var row []nbr
	for i := range n {
		set.reset(k, r2)
		tree.query(i, &set)
		row = row[:0]
		for _, j := range set.idx {
			d2 := g.metric.SquaredDistance(features[i], features[j])
			if cut > 0 && !(d2 <= cut*cut) {
				continue
			}
			row = append(row, nbr{j, d2})
		}
		slices.SortFunc(row, func(a, b nbr) int { return a.j - b.j })
		for _, e := range row {
			g.col = append(g.col, e.j)
			g.dist2 = append(g.dist2, e.d2)
		}
		g.rowPtr[i+1] = len(g.col)
	}
}

// N returns the number of products.
func (g *Graph) N() int {
	if g == nil {
		return 0
	}
	return g.n
}

// NNZ returns the number of stored (directed) edges.
func (g *Graph) NNZ() int {
	if g == nil {
		return 0
	}
	return len(g.col)
}

// Metric returns the metric the graph was built with.
func (g *Graph) Metric() Metric {
	if g == nil {
		return Euclidean
	}
	return g.metric
}

// Neighbours returns row i's neighbour indices (ascending) and squared
// distances. The slices are views into the graph and must not be modified.
func (g *Graph) Neighbours(i int) (cols []int, dist2 []float64) {
	if g == nil || i < 0 || i >= g.n {
		return nil, nil
	}
	a, b := g.rowPtr[i], g.rowPtr[i+1]
	return g.col[a:b], g.dist2[a:b]
}
