package cvi

import (
	"math"
	"math/rand/v2"
	"testing"
)

// cityRegimes are the bins the online shortcuts are checked over: a
// third of the stations stocked out in every bin (busy, censored), every
// stock known with one station in twenty stocked out (quiet), and no
// station stocked out (no censoring; no station can be in excess).
var cityRegimes = []struct {
	name string
	fill func(rng *rand.Rand, bin []Obs)
}{
	{"third-out", nil},
	{"stock-known", suppliedCityBin},
	{"none-out", func(rng *rand.Rand, bin []Obs) {
		for k := range bin {
			bin[k] = Obs{Y: math.Max(0, 5+2*rng.NormFloat64()), Supply: math.Inf(1)}
		}
	}},
}

// regimeBins returns cityOnline's bins refilled for the regime r.
func regimeBins(bins [][]Obs, r int) [][]Obs {
	fill := cityRegimes[r].fill
	if fill == nil {
		return bins
	}
	rng := rand.New(rand.NewPCG(uint64(r), 17))
	for _, bin := range bins {
		fill(rng, bin)
	}
	return bins
}

// marginalGap is the largest difference between two bins' filtered
// marginals: means in the reference's standard deviations, variances
// relative to the reference's.
func marginalGap(ref, got *BinResult) (mean, variance float64) {
	for k := range ref.Mean {
		sd := math.Sqrt(ref.Var[k])
		mean = math.Max(mean, math.Abs(got.Mean[k]-ref.Mean[k])/sd)
		variance = math.Max(variance, math.Abs(got.Var[k]-ref.Var[k])/ref.Var[k])
	}
	return mean, variance
}

// TestNewtonTolMatchesExact: the refinement's Newton systems solved to
// the default residual (cgTol) and to the rounding of a direct solve
// (cgTolExact) give filtered means within 1e-5 sd and variances within
// 1e-5 relatively over 24 bins of a 300-station city in each regime, with
// the same CVI steps in all but a few bins.
func TestNewtonTolMatchesExact(t *testing.T) {
	const np, nb, tol = 300, 24, 1e-5
	for r, regime := range cityRegimes {
		t.Run(regime.name, func(t *testing.T) {
			t.Parallel()
			ref, bins := cityOnline(t, np, 11)
			got, _ := cityOnline(t, np, 11)
			bins = regimeBins(bins, r)
			ref.newton.tol = cgTolExact
			var rr, rg BinResult
			var worstM, worstV float64
			sameSteps := 0
			for b, obs := range bins[:nb] {
				if err := ref.Step(float64(b+1), obs, &rr); err != nil {
					t.Fatal(err)
				}
				if err := got.Step(float64(b+1), obs, &rg); err != nil {
					t.Fatal(err)
				}
				if rr.Steps == rg.Steps {
					sameSteps++
				}
				m, v := marginalGap(&rr, &rg)
				worstM, worstV = math.Max(worstM, m), math.Max(worstV, v)
			}
			t.Logf("%s: means within %.2g sd, variances %.2g, same steps in %d of %d bins", regime.name, worstM, worstV, sameSteps, nb)
			if worstM > tol || worstV > tol || sameSteps < nb-2 {
				t.Fatalf("default residual against exact: means %.3g sd, variances %.3g (tolerance %g), same steps in %d of %d bins", worstM, worstV, tol, sameSteps, nb)
			}
		})
	}
}
