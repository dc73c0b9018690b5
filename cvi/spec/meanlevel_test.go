package spec

import (
	"math"
	"testing"

	"github.com/dcgpd/dcgpd/cvi"
)

// TestEstimateScale: the level of each product is the ratio of its
// smoothed demand to its fitted profile over its observed bins, exactly
// (to 1e-12), whatever the unobserved bins hold; a product whose fitted
// sum is not positive, or that is never observed, keeps its level; the
// level is clamped to [MinLevelScale, MaxLevelScale].
func TestEstimateScale(t *testing.T) {
	p := &Profile{Step: 1, Cells: 4, M: [][]float64{{2, 4, 6, 8}, {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 2, 3, 4}, {5, 5, 5, 5}}}
	const np = 5
	times := []float64{0, 1, 2, 3, 4, 5}
	obs := make([]cvi.Obs, len(times)*np)
	f := make([]float64, len(times)*np)
	for n, tm := range times {
		for k := range np {
			i := n*np + k
			obs[i] = cvi.Obs{Y: 1, Supply: math.Inf(1)}
			f[i] = []float64{0.6, 3, 0.6, 100, 0.001}[k] * p.At(tm, k)
			if k == 2 {
				f[i] = 7 // product 2: observed nowhere
				obs[i].Y = math.NaN()
			}
			if k == 0 && n == 5 {
				obs[i].Y, f[i] = math.NaN(), 1e6 // an unobserved bin does not count
			}
		}
	}
	prev := []float64{1, 1.3, 0.9, 1, 1}
	got := make([]float64, np)
	p.EstimateScale(times, obs, f, np, prev, got)
	want := []float64{0.6, 1.3, 0.9, MaxLevelScale, MinLevelScale}
	for k := range want {
		if math.Abs(got[k]-want[k]) > 1e-12 {
			t.Errorf("product %d: level %v, want %v", k, got[k], want[k])
		}
	}
}

// TestMeanScaleDoesNotCompound: SetMeanScale scales the fitted profile,
// not the last scaled one, and nil returns to it; Scaled does not alias.
func TestMeanScaleDoesNotCompound(t *testing.T) {
	base := &Profile{Step: 1, Cells: 2, M: [][]float64{{2, 4}}}
	b := &Built{Mean: base}
	b.SetMeanScale([]float64{2})
	b.SetMeanScale([]float64{3})
	if got := b.Mean.M[0]; got[0] != 6 || got[1] != 12 {
		t.Errorf("after levels 2 then 3: %v, want [6 12]", got)
	}
	if base.M[0][0] != 2 || b.MeanBase() != base {
		t.Error("the fitted profile moved")
	}
	b.SetMeanScale(nil)
	if b.Mean != base || b.MeanScale() != nil {
		t.Error("nil level does not return to the fitted profile")
	}
}
