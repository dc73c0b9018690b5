package stream

import (
	"math"
	"testing"

	"github.com/dcgpd/dcgpd/cvi"
)

// TestCellNoise: pred_var's noise is σ² without level noise whatever the
// level, σ² + c·max(level, 0) with it at the cell's level, and σ² where
// no observation (hence no level) is given.
func TestCellNoise(t *testing.T) {
	const s2, c = 2.0, 0.5
	obs := []cvi.Obs{{Y: 1, Supply: math.Inf(1), Level: 6}, {Y: 1, Supply: math.Inf(1), Level: -1}}
	g, _ := cvi.NewGaussian(s2)
	lik := cvi.Factorised{Scalar: g}
	for k := range obs {
		if got := CellNoise(lik, obs, k); got != s2 {
			t.Errorf("off, cell %d: %v, want %v", k, got, s2)
		}
	}
	if err := g.SetLevelNoise(c); err != nil {
		t.Fatal(err)
	}
	for k, want := range []float64{s2 + c*6, s2} {
		if got := CellNoise(lik, obs, k); math.Abs(got-want) > 1e-15*want {
			t.Errorf("on, cell %d: %v, want %v", k, got, want)
		}
	}
	if got := CellNoise(lik, nil, 0); got != s2 {
		t.Errorf("on, no observation: %v, want %v", got, s2)
	}
	if e := NewEstimate("p", 3, 1, CellNoise(lik, obs, 0)); e.PredVar != 1+s2+c*6 {
		t.Errorf("pred_var %v, want %v", e.PredVar, 1+s2+c*6)
	}
}
