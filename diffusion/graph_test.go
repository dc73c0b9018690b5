package diffusion

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcgpd/dcgpd/internal/geo"
)

// bruteNeighbours is the neighbourhood definition written directly: sort
// all others by (distance, index), keep the first k (0 = all) within the
// cut-off (0 = none).
func bruteNeighbours(feats [][]float64, m Metric, i, k int, cut float64) []int {
	var js []int
	for j := range feats {
		if j != i && (cut == 0 || m.Distance(feats[i], feats[j]) <= cut) {
			js = append(js, j)
		}
	}
	d := func(j int) float64 { return m.SquaredDistance(feats[i], feats[j]) }
	slices.SortFunc(js, func(a, b int) int {
		switch da, db := d(a), d(b); {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return a - b
	})
	if k > 0 && len(js) > k {
		js = js[:k]
	}
	slices.Sort(js)
	return js
}

func TestGraphNeighbourhoods(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	grid := make([][]float64, 0, 100) // many exact ties
	for a := range 10 {
		for b := range 10 {
			grid = append(grid, []float64{float64(a), float64(b)})
		}
	}
	dup := randFeatures(r, 40, 2, 0, 1)
	dup = append(dup, dup[:10]...) // coincident points
	geo := randFeatures(r, 300, 2, 0, 1)
	for _, p := range geo {
		p[0], p[1] = 40.6+0.3*p[0], -74.1+0.3*p[1] // around New York
	}
	world := randFeatures(r, 200, 2, 0, 1)
	for _, p := range world {
		p[0], p[1] = math.Asin(2*p[0]-1)*180/math.Pi, 360*p[1]-180
	}
	tests := []struct {
		name  string
		feats [][]float64
		opt   GraphOptions
	}{
		{"1-D k=3", randFeatures(r, 50, 1, 0, 10), GraphOptions{K: 3}},
		{"2-D k=8", randFeatures(r, 500, 2, -5, 5), GraphOptions{K: 8}},
		{"2-D cutoff", randFeatures(r, 500, 2, -5, 5), GraphOptions{Cutoff: 0.7}},
		{"3-D k=5 cutoff", randFeatures(r, 300, 3, 0, 1), GraphOptions{K: 5, Cutoff: 0.15}},
		{"5-D k=10", randFeatures(r, 200, 5, 0, 1), GraphOptions{K: 10}},
		{"grid ties k=4", grid, GraphOptions{K: 4}},
		{"grid ties k=7", grid, GraphOptions{K: 7}},
		{"grid cutoff 1", grid, GraphOptions{Cutoff: 1}},
		{"duplicates k=3", dup, GraphOptions{K: 3}},
		{"geo k=6", geo, GraphOptions{Metric: GreatCircle, K: 6}},
		{"geo cutoff 2 km", geo, GraphOptions{Metric: GreatCircle, Cutoff: 2000}},
		{"world k=4 cutoff 2000 km", world, GraphOptions{Metric: GreatCircle, K: 4, Cutoff: 2e6}},
		{"world cutoff beyond antipode", world[:30], GraphOptions{Metric: GreatCircle, Cutoff: 3e7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGraph(tc.feats, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.feats {
				cols, d2 := g.Neighbours(i)
				want := bruteNeighbours(tc.feats, tc.opt.Metric, i, tc.opt.K, tc.opt.Cutoff)
				if !slices.Equal(cols, want) {
					t.Fatalf("row %d: neighbours %v, want %v", i, cols, want)
				}
				for k, j := range cols {
					if d2[k] != tc.opt.Metric.SquaredDistance(tc.feats[i], tc.feats[j]) {
						t.Fatalf("row %d: stored squared distance to %d differs", i, j)
					}
				}
			}
		})
	}
}

// k = N_p − 1 (or more) is the dense graph, entry for entry.
func TestKNNAllEqualsDense(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	feats := randFeatures(r, 40, 2, -2, 2)
	geo := randFeatures(r, 40, 2, 0, 1)
	for _, p := range geo {
		p[0], p[1] = 48.8+0.1*p[0], 2.3+0.1*p[1]
	}
	for _, c := range []struct {
		feats [][]float64
		m     Metric
		ell   float64
	}{{feats, Euclidean, 0.8}, {geo, GreatCircle, 1500}} {
		dense := denseT(t, mustTransition(t, c.feats, c.ell, 0.15, GraphOptions{Metric: c.m}))
		for _, k := range []int{len(c.feats) - 1, len(c.feats) + 5} {
			knn := denseT(t, mustTransition(t, c.feats, c.ell, 0.15, GraphOptions{Metric: c.m, K: k}))
			if !slices.Equal(dense, knn) {
				t.Errorf("%v k=%d: kNN transition differs from dense", c.m, k)
			}
		}
	}
}

func TestMetric(t *testing.T) {
	R := geo.EarthRadius
	tests := []struct {
		name string
		p, q []float64
		want float64
		tol  float64 // relative
	}{
		{"one degree of latitude", []float64{10, 20}, []float64{11, 20}, R * math.Pi / 180, 1e-12},
		{"quarter equator", []float64{0, 0}, []float64{0, 90}, R * math.Pi / 2, 1e-14},
		{"antipodes", []float64{30, 40}, []float64{-30, -140}, R * math.Pi, 1e-14},
		{"pole to pole", []float64{90, 0}, []float64{-90, 123}, R * math.Pi, 1e-14},
		{"across the date line", []float64{0, 179.5}, []float64{0, -179.5}, R * math.Pi / 180, 1e-12},
		// 1e-7 degree of longitude at 60° N: planar formula is exact to O(d³).
		{"tiny", []float64{60, 10}, []float64{60, 10.0000001}, R * math.Cos(math.Pi/3) * 1e-7 * math.Pi / 180, 1e-8},
		{"same point", []float64{51.5, -0.1}, []float64{51.5, -0.1}, 0, 0},
	}
	for _, tc := range tests {
		got := GreatCircle.Distance(tc.p, tc.q)
		if !closeRel(got, tc.want, tc.tol, 0) {
			t.Errorf("%s: %.12g m, want %.12g", tc.name, got, tc.want)
		}
		if back := GreatCircle.Distance(tc.q, tc.p); back != got {
			t.Errorf("%s: not symmetric (%v vs %v)", tc.name, got, back)
		}
	}
	// Euclidean squared distances are summed directly: exactly 0 on the
	// diagonal even for large coordinates.
	p := []float64{123456.789, -98765.4321, 1e8 / 3}
	if d := Euclidean.SquaredDistance(p, p); d != 0 {
		t.Errorf("Euclidean self-distance %v", d)
	}
	if d := Euclidean.Distance([]float64{0, 0}, []float64{3, 4}); d != 5 {
		t.Errorf("Euclidean 3-4-5: %v", d)
	}
	if Euclidean.String() != "euclidean" || GreatCircle.String() != "great-circle" || Metric(9).String() != "Metric(9)" {
		t.Error("Metric.String")
	}
}
