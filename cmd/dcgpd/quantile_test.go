package main

import (
	"math"
	"testing"
)

// TestFitQuantilesAsServe: fit's Gaussian posterior rows give q05 and q95
// as the daemon does, the quantiles of max(f, 0): never negative, the
// Gaussian's where it is above 0.
func TestFitQuantilesAsServe(t *testing.T) {
	for _, tc := range []struct{ m, v, q05, q95 float64 }{
		{5, 1, 5 - z95, 5 + z95},
		{-0.5, 1, 0, -0.5 + z95},
		{-3, 1, 0, 0},
		{2, 0, 2, 2},
	} {
		r := gaussianRow("t", "p", tc.m, tc.v, 0.5)
		if math.Abs(r.Q05-tc.q05) > 1e-12 || math.Abs(r.Q95-tc.q95) > 1e-12 || r.Mean != tc.m || r.Var != tc.v || r.PredVar != tc.v+0.5 {
			t.Errorf("N(%g, %g): %+v, want q05 %g, q95 %g", tc.m, tc.v, r, tc.q05, tc.q95)
		}
	}
}
