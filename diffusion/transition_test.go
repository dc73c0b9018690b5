package diffusion

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

var diag3 = [][]float64{{-1, -1}, {0, 0}, {1, 1}}

// Reference-notes §7 transition matrices (β = 0.5, s = 1, our convention).
func TestTransitionReferenceVectors(t *testing.T) {
	bike := [][]float64{{-.05, -.05}, {-.1, -.1}, {.1, .1}, {.1, .07}}
	tests := []struct {
		name  string
		feats [][]float64
		ell   float64
		want  []float64 // dense, checked to 1e-6 as printed
	}{
		{"2 nodes ell=0.3", [][]float64{{-1, -1}, {1, 1}}, 0.3, []float64{0, 1, 1, 0}},
		{"2 nodes ell=1", [][]float64{{-1, -1}, {1, 1}}, 1, []float64{0, 1, 1, 0}},
		{"2 nodes ell=50", [][]float64{{-1, -1}, {1, 1}}, 50, []float64{0, 1, 1, 0}},
		{"3 nodes ell=1", diag3, 1, []float64{0, .952574, .047426, .5, 0, .5, .047426, .952574, 0}},
		{"3 nodes ell=10", diag3, 10, []float64{0, .507499, .492501, .5, 0, .5, .492501, .507499, 0}},
		{"bike 4 hubs ell=0.03", bike, 0.03, []float64{
			0, 1, 0, 0,
			1, 0, 0, 0,
			0, 0, 0, 1,
			0, 0, 1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			T := denseT(t, mustTransition(t, tc.feats, tc.ell, 0, GraphOptions{}))
			for k, w := range tc.want {
				if !closeAbs(T[k], w, 1e-6) {
					t.Errorf("T[%d,%d] = %.9g, want %.6g", k/len(tc.feats), k%len(tc.feats), T[k], w)
				}
			}
		})
	}
	// The bike matrix's tiny entries, printed to 5 significant digits.
	T := denseT(t, mustTransition(t, bike, 0.03, 0, GraphOptions{}))
	for _, c := range []struct {
		i, j int
		want float64
	}{{0, 2, 2.2336e-10}, {0, 3, 2.0107e-8}, {2, 0, 2.2897e-11}} {
		if got := T[c.i*4+c.j]; !closeRel(got, c.want, 5e-5, 0) {
			t.Errorf("bike T[%d,%d] = %.6g, want %.5g", c.i, c.j, got, c.want)
		}
	}
}

// Every row sends exactly π to the sink and 1 − π to the other products.
func TestTransitionSinkAndRowSums(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	feats := randFeatures(r, 25, 3, -2, 2)
	for _, opt := range []GraphOptions{{}, {K: 5}, {Cutoff: 1.5}, {K: 4, Cutoff: 2}} {
		for _, pi := range []float64{0, 0.2, 0.73, 0.999} {
			tr := mustTransition(t, feats, 0.7, pi, opt)
			for i := range tr.N() {
				if tr.At(i, i) != 0 {
					t.Fatalf("%+v π=%v: T[%d,%d] = %v, want exactly 0", opt, pi, i, i, tr.At(i, i))
				}
				cols, probs := tr.Row(i)
				if len(cols) == 0 {
					if tr.Sink(i) != 1 {
						t.Fatalf("row %d has no neighbours but sink %v", i, tr.Sink(i))
					}
					continue
				}
				if tr.Sink(i) != pi {
					t.Fatalf("%+v: sink of row %d = %v, want exactly %v", opt, i, tr.Sink(i), pi)
				}
				var s float64
				for _, p := range probs {
					if !(p >= 0 && p <= 1) {
						t.Fatalf("T entry %v not a probability", p)
					}
					s += p
				}
				if !closeAbs(s, 1-pi, 1e-14) || !closeAbs(s+tr.Sink(i), 1, 1e-14) {
					t.Fatalf("%+v π=%v: row %d sums to %.17g (+ sink %.17g)", opt, pi, i, s, tr.Sink(i))
				}
			}
		}
	}
}

// expandedSqDist is the reference's |a/ℓ|² − 2(a/ℓ)·(b/ℓ) + |b/ℓ|², clipped
// at 0, with the cross term accumulated by fused multiply-adds as a BLAS
// kernel does and the norms without.
func expandedSqDist(a, b []float64, ell float64) float64 {
	var aa, bb, ab float64
	for k := range a {
		aa += (a[k] / ell) * (a[k] / ell)
		bb += (b[k] / ell) * (b[k] / ell)
		ab = math.FMA(a[k]/ell, b[k]/ell, ab)
	}
	return math.Max(aa-2*ab+bb, 0)
}

// expandedRow computes row i of T the way the reference does: S =
// exp(−r²/2) on expanded distances, W = S − I, and the sink by augmenting
// the row with (π/(1−π)) Σ_j W_ij before normalising.
func expandedRow(feats [][]float64, i int, ell, pi float64) []float64 {
	w := make([]float64, len(feats))
	var sum float64
	for j := range feats {
		w[j] = math.Exp(-0.5 * expandedSqDist(feats[i], feats[j], ell))
		if j == i {
			w[j]--
		}
		sum += w[j]
	}
	for j := range w {
		w[j] *= (1 - pi) / sum
	}
	return w
}

// The reference's expanded distances leave a residue on the diagonal that
// dominates rows whose neighbours are all far away (its ST row-6 bug). Our
// diagonal is exactly zero and the row goes to its nearest neighbour.
func TestNoSpuriousSelfLoop(t *testing.T) {
	const ell, pi = 0.1, 0.2
	// Find a point whose expanded self-distance is not exactly 0.
	var p []float64
	for k := range 1000 {
		c := []float64{12.3 + 0.0137*float64(k), -7.9 + 0.0071*float64(k)}
		if expandedSqDist(c, c, ell) > 0 {
			p = c
			break
		}
	}
	if p == nil {
		t.Fatal("no point with an expanded-distance residue found")
	}
	// Its only neighbours are 1.2 and 1.5 away: weights e^−72 and e^−112.5.
	feats := [][]float64{p, {p[0] + 1.2, p[1]}, {p[0], p[1] - 1.5}}
	ref := expandedRow(feats, 0, ell, pi)
	if !(math.Abs(ref[0]) > 0.5) {
		t.Fatalf("construction failed: the expanded formula gives T[0,0] = %v, want a spurious self-loop", ref[0])
	}
	tr := mustTransition(t, feats, ell, pi, GraphOptions{})
	if tr.At(0, 0) != 0 {
		t.Errorf("T[0,0] = %v, want exactly 0", tr.At(0, 0))
	}
	if !closeAbs(tr.At(0, 1), 1-pi, 1e-12) || tr.Sink(0) != pi {
		t.Errorf("row 0 = (%v, %v, %v) sink %v, want (0, 0.8, ~0) sink 0.2", tr.At(0, 0), tr.At(0, 1), tr.At(0, 2), tr.Sink(0))
	}
}

// The ST-1/ST-2 station locations (numpy seed 123, U(−2,2)², x then y per
// station, reproduced with MT19937), ℓ = 0.1, π = 0.2: every row puts 0.8
// on its nearest station, row 6 on station 8 (where the reference has its
// self-loop T[6,6] = 0.8).
func TestSTLocations(t *testing.T) {
	locs := [][]float64{
		{0.7858767423914466, -0.8554426601984821},
		{-1.0925941857431876, 0.20525907633156493},
		{0.8778758791422523, -0.30757415950215616},
		{1.923056793538462, 0.7393189543394532},
		{-0.07627239406255626, -0.4315299272233979},
		{-0.6272879353965224, 0.9161988295361665},
		{-0.24571102128150235, -1.7612884135617266},
		{-0.40782297867827433, 0.9519816229281428},
		{-1.270033078186, -1.2981929754100299},
		{0.12620549536735348, 0.12731034838746424},
	}
	nearest := []int{2, 5, 0, 2, 9, 7, 8, 5, 6, 4}
	tr := mustTransition(t, locs, 0.1, 0.2, GraphOptions{})
	for i, j := range nearest {
		if !closeAbs(tr.At(i, j), 0.8, 1e-6) || tr.Sink(i) != 0.2 || tr.At(i, i) != 0 {
			t.Errorf("row %d: T[%d,%d] = %v, T[%d,%d] = %v, sink %v; want 0.8 on %d, 0 on the diagonal, sink 0.2",
				i, i, j, tr.At(i, j), i, i, tr.At(i, i), tr.Sink(i), j)
		}
	}
}

// Rows whose weights underflow, or that have no neighbour, send nothing
// and never produce NaN.
func TestIsolatedRows(t *testing.T) {
	// Product 2 is 1000 lengthscales from the others: e^(−5e5) underflows.
	feats := [][]float64{{0, 0}, {0.5, 0}, {1000, 0}}
	for _, pi := range []float64{0, 0.3} {
		tr := mustTransition(t, feats, 1, pi, GraphOptions{})
		T := denseT(t, tr)
		for k, v := range T {
			if math.IsNaN(v) {
				t.Fatalf("T[%d] is NaN", k)
			}
		}
		if tr.At(2, 0) != 0 || tr.At(2, 1) != 0 || tr.Sink(2) != 1 {
			t.Errorf("π=%v: isolated row 2 = (%v, %v, 0) sink %v, want zeros and sink 1", pi, tr.At(2, 0), tr.At(2, 1), tr.Sink(2))
		}
		// Rows 0 and 1 still send 1 − π to each other (and nothing to 2).
		if !closeAbs(tr.At(0, 1), 1-pi, 1e-15) || tr.At(0, 2) != 0 || tr.Sink(0) != pi {
			t.Errorf("π=%v: row 0 = (0, %v, %v) sink %v", pi, tr.At(0, 1), tr.At(0, 2), tr.Sink(0))
		}
		dl := make([]float64, 9)
		dp := make([]float64, 9)
		if err := tr.DerivsDense(dl, dp); err != nil {
			t.Fatal(err)
		}
		for k := range dl {
			if math.IsNaN(dl[k]) || math.IsNaN(dp[k]) {
				t.Fatalf("derivative %d is NaN", k)
			}
		}
	}
	// Far but not underflowing (nearest 30ℓ away, weight e^−450): the row
	// is normalised exactly, relative to its nearest neighbour.
	tr := mustTransition(t, [][]float64{{0}, {30}, {31}}, 1, 0, GraphOptions{})
	if want := 1 / (1 + math.Exp(-0.5*(31*31-30*30))); !closeAbs(tr.At(0, 1), want, 1e-15) {
		t.Errorf("far row: T[0,1] = %.17g, want %.17g", tr.At(0, 1), want)
	}
	// A single product and a cut-off that leaves a product alone.
	one := mustTransition(t, [][]float64{{1, 2}}, 1, 0.1, GraphOptions{})
	if one.NNZ() != 0 || one.Sink(0) != 1 {
		t.Errorf("single product: nnz %d sink %v", one.NNZ(), one.Sink(0))
	}
	cut := mustTransition(t, [][]float64{{0}, {1}, {5}}, 1, 0.1, GraphOptions{Cutoff: 2})
	if cols, _ := cut.Row(2); len(cols) != 0 || cut.Sink(2) != 1 {
		t.Errorf("cut-off row 2: neighbours %v sink %v", cols, cut.Sink(2))
	}
	// A tiny lengthscale with coincident points: no 0·Inf.
	tiny := mustTransition(t, [][]float64{{0}, {0}, {1}}, 1e-200, 0, GraphOptions{})
	if tiny.At(0, 1) != 1 || tiny.At(0, 2) != 0 || tiny.Sink(2) != 1 {
		t.Errorf("tiny ℓ: T[0,1] = %v, T[0,2] = %v, sink(2) = %v", tiny.At(0, 1), tiny.At(0, 2), tiny.Sink(2))
	}
}

func TestTransitionValidation(t *testing.T) {
	ok := [][]float64{{0, 0}, {1, 1}}
	tests := []struct {
		name    string
		feats   [][]float64
		ell, pi float64
		opt     GraphOptions
		want    string
	}{
		{"zero ell", ok, 0, 0, GraphOptions{}, "lengthscale"},
		{"negative ell", ok, -1, 0, GraphOptions{}, "lengthscale"},
		{"NaN ell", ok, math.NaN(), 0, GraphOptions{}, "lengthscale"},
		{"Inf ell", ok, math.Inf(1), 0, GraphOptions{}, "lengthscale"},
		{"negative pi", ok, 1, -0.1, GraphOptions{}, "sink probability"},
		{"pi one", ok, 1, 1, GraphOptions{}, "sink probability"},
		{"NaN pi", ok, 1, math.NaN(), GraphOptions{}, "sink probability"},
		{"no products", nil, 1, 0, GraphOptions{}, "no products"},
		{"empty vector", [][]float64{{}}, 1, 0, GraphOptions{}, "empty feature"},
		{"ragged", [][]float64{{0, 0}, {1}}, 1, 0, GraphOptions{}, "product 1 has 1 features"},
		{"NaN feature", [][]float64{{0, 0}, {math.NaN(), 1}}, 1, 0, GraphOptions{}, "feature 0 of product 1"},
		{"Inf feature", [][]float64{{0, math.Inf(-1)}}, 1, 0, GraphOptions{}, "feature 1 of product 0"},
		{"great circle 3-D", [][]float64{{0, 0, 0}}, 1, 0, GraphOptions{Metric: GreatCircle}, "(lat, lon)"},
		{"latitude", [][]float64{{40, -73}, {91, 0}}, 1, 0, GraphOptions{Metric: GreatCircle}, "latitude 91"},
		{"longitude", [][]float64{{40, 400}}, 1, 0, GraphOptions{Metric: GreatCircle}, "longitude 400"},
		{"unknown metric", ok, 1, 0, GraphOptions{Metric: 7}, "unknown metric"},
		{"negative K", ok, 1, 0, GraphOptions{K: -1}, "negative"},
		{"negative cutoff", ok, 1, 0, GraphOptions{Cutoff: -1}, "cut-off"},
		{"NaN cutoff", ok, 1, 0, GraphOptions{Cutoff: math.NaN()}, "cut-off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTransition(tc.feats, tc.ell, tc.pi, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "diffusion: ") {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	g, err := NewGraph(ok, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.TransitionInto(nil, 1, 0); err == nil {
		t.Error("nil destination accepted")
	}
}

func TestTransitionDense(t *testing.T) {
	tr, err := NewTransitionDense(3, []float64{0, 0.5, 0.25, 1, 0, 0, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if tr.NNZ() != 3 || tr.Sink(0) != 0.25 || tr.Sink(1) != 0 || tr.Sink(2) != 1 {
		t.Errorf("nnz %d sinks %v %v %v", tr.NNZ(), tr.Sink(0), tr.Sink(1), tr.Sink(2))
	}
	if _, _, ok := tr.Params(); ok {
		t.Error("explicit transition reports kernel parameters")
	}
	if err := tr.Derivs(nil, nil); err == nil {
		t.Error("Derivs on an explicit transition: no error")
	}
	// Within tolerance above 1: rescaled to exactly 1.
	tr, err = NewTransitionDense(3, []float64{0, 0.6, 0.4 + 5e-10, 1, 0, 0, 1, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if s := tr.At(0, 1) + tr.At(0, 2); !closeAbs(s, 1, 1e-16) || tr.Sink(0) != 0 {
		t.Errorf("row sum 1+5e-10: rescaled sum %.17g, sink %v", s, tr.Sink(0))
	}
	bad := []struct {
		name  string
		n     int
		probs []float64
		want  string
	}{
		{"no products", 0, nil, "at least one"},
		{"size", 2, []float64{0, 1, 1}, "want 2×2"},
		{"negative", 2, []float64{0, -0.1, 1, 0}, "T[0,1]"},
		{"above one", 2, []float64{0, 1.5, 1, 0}, "T[0,1]"},
		{"NaN", 2, []float64{0, math.NaN(), 1, 0}, "T[0,1]"},
		{"self-loop", 2, []float64{0.1, 0.5, 1, 0}, "self-loop"},
		{"row sum", 3, []float64{0, 0, 0, 0.6, 0, 0.5, 0, 0, 0}, "row 1: probabilities sum"},
	}
	for _, tc := range bad {
		if _, err := NewTransitionDense(tc.n, tc.probs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}
