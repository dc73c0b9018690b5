package inventory

import (
	"strings"
	"testing"
)

// TestRiskNilDestination refuses a nil *Risk with an error, not a panic.
func TestRiskNilDestination(t *testing.T) {
	pl, err := NewPlanner(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	f := Forecast{Mean: []float64{1, 2}, Var: []float64{0.5, 0.5}}
	st := Station{Capacity: 5, Bikes: 2}
	calls := []struct {
		name string
		call func() error
	}{
		{"Risk", func() error { return pl.Risk(nil, st, f, f) }},
		{"RiskAtRates", func() error { return pl.RiskAtRates(nil, st, f.Mean, f.Mean) }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic: %v", p)
				}
			}()
			if err := c.call(); err == nil || !strings.Contains(err.Error(), "nil destination") {
				t.Fatalf("error %v, want one saying nil destination", err)
			}
		})
	}
}

// TestCertainBoundaryProbabilities: a station that starts empty (full)
// has P(empty within h) (P(full within h)) exactly 1 at every h, however
// the quadrature's weights round.
func TestCertainBoundaryProbabilities(t *testing.T) {
	f := Forecast{Mean: []float64{0.5, 2, 4}, Var: []float64{2.25, 1, 3}}
	for _, rho := range []float64{1, 0.5, 0} {
		cfg := DefaultConfig()
		cfg.Shared = rho
		pl, err := NewPlanner(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range []Station{{Capacity: 15, Bikes: 0}, {Capacity: 15, Bikes: 15}, {Capacity: 0, Bikes: 0}} {
			var r Risk
			if err := pl.Risk(&r, st, f, f); err != nil {
				t.Fatal(err)
			}
			for k := range r.EmptyWithin {
				if st.Bikes == 0 && r.EmptyWithin[k] != 1 {
					t.Errorf("ρ %v, %d/%d bikes: P(empty within %d) = %v, want exactly 1", rho, st.Bikes, st.Capacity, k+1, r.EmptyWithin[k])
				}
				if st.Bikes == st.Capacity && r.FullWithin[k] != 1 {
					t.Errorf("ρ %v, %d/%d bikes: P(full within %d) = %v, want exactly 1", rho, st.Bikes, st.Capacity, k+1, r.FullWithin[k])
				}
			}
		}
	}
}
