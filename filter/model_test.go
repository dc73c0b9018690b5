package filter

import (
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// TestModelAccessors: a model reports its products, kernels and state
// dimension for a shared temporal kernel and for per-product kernels.
func TestModelAccessors(t *testing.T) {
	k, _ := kernel.NewMatern52(1, 2)
	sp, _ := kernel.NewRBF(kernel.Euclidean, 1, 1)
	m, err := NewModel(k, sp, [][]float64{{0}, {1}, {3}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.NumProducts() != 3 || m.StateDim() != 9 || m.Independent() || m.Spatial() != kernel.Spatial(sp) {
		t.Errorf("shared model: %d products, state %d, independent %v, spatial %v", m.NumProducts(), m.StateDim(), m.Independent(), m.Spatial())
	}
	for p := 0; p < 3; p++ {
		if m.TemporalOf(p) != kernel.Temporal(k) {
			t.Errorf("shared model: TemporalOf(%d) is not the shared kernel", p)
		}
	}
	a, _ := kernel.NewMatern12(1, 1)
	b, _ := kernel.NewMatern32(2, 3)
	per, err := NewIndependentModel([]kernel.Temporal{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if per.NumProducts() != 2 || per.StateDim() != 3 || !per.Independent() || per.Spatial() != nil {
		t.Errorf("per-product model: %d products, state %d, independent %v, spatial %v", per.NumProducts(), per.StateDim(), per.Independent(), per.Spatial())
	}
	if per.Temporal() != kernel.Temporal(a) || per.TemporalOf(0) != kernel.Temporal(a) || per.TemporalOf(1) != kernel.Temporal(b) {
		t.Error("per-product model: Temporal/TemporalOf do not return the products' own kernels")
	}
}
