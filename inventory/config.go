package inventory

import (
	"fmt"
	"math"
)

// Config holds a Planner's settings. Start from DefaultConfig and call
// Validate after changing it (NewPlanner does).
type Config struct {
	// PickupWeight and ReturnWeight weigh an unmet pickup and an unmet
	// return in the user-dissatisfaction function (both 1 by default).
	PickupWeight, ReturnWeight float64
	// PlanningBins is the number of bins, from the first forecast bin,
	// over which UDF(s) is summed; 0 means every bin the forecasts hold.
	PlanningBins int
	// Shared is the fraction ρ of each bin's forecast variance that is
	// one shock common to all bins of a flow (f_k = m_k + σ_k(√ρ z + √(1−ρ) z_k),
	// z and z_k independent standard normals, pickups independent of
	// returns). 1 treats a flow's forecast errors as one level error;
	// 0 as independent per bin.
	Shared float64
	// SharedNodes is the number of Gauss nodes per flow on each piece of
	// the shared shock's line (ρ = 1: the line is cut at the rates'
	// kinks; ρ < 1: one piece, Gauss–Hermite). The two flows' nodes form
	// a grid.
	SharedNodes int
	// Breaks is the largest number of kinks (z where a bin's rate
	// reaches 0) at which the shared shock's line is cut (ρ = 1).
	Breaks int
	// BinNodes is the number of Gauss nodes per flow over each bin's own
	// shock above its kink (plus one node of rate 0 below it); unused
	// when Shared = 1.
	BinNodes int
	// Tolerance bounds the Poisson tail that uniformisation drops in each
	// bin: the computed distribution is exact to within Tolerance in total
	// variation per bin (see the package documentation).
	Tolerance float64
	// MaxCapacity bounds a station's capacity (a guard against absurd
	// input; memory grows with it).
	MaxCapacity int
	// MaxRate bounds a bin's rate (events per bin) at any quadrature
	// node; the work per bin grows with it.
	MaxRate float64
}

// DefaultConfig returns the settings dcgpd uses unless told otherwise.
func DefaultConfig() Config {
	return Config{
		PickupWeight: 1,
		ReturnWeight: 1,
		Shared:       1,
		SharedNodes:  12,
		Breaks:       2,
		BinNodes:     4,
		Tolerance:    1e-12,
		MaxCapacity:  1000,
		MaxRate:      10000,
	}
}

// Validate reports the first setting that is out of range.
func (c Config) Validate() error {
	switch {
	case !(c.PickupWeight >= 0) || math.IsInf(c.PickupWeight, 0):
		return fmt.Errorf("inventory: pickup weight %v is not a finite number ≥ 0", c.PickupWeight)
	case !(c.ReturnWeight >= 0) || math.IsInf(c.ReturnWeight, 0):
		return fmt.Errorf("inventory: return weight %v is not a finite number ≥ 0", c.ReturnWeight)
	case c.PlanningBins < 0:
		return fmt.Errorf("inventory: planning bins %d is negative", c.PlanningBins)
	case !(c.Shared >= 0 && c.Shared <= 1):
		return fmt.Errorf("inventory: shared variance fraction %v is not in [0, 1]", c.Shared)
	case c.SharedNodes < 1 || c.SharedNodes > maxGauss:
		return fmt.Errorf("inventory: shared nodes %d not in [1, %d]", c.SharedNodes, maxGauss)
	case c.BinNodes < 1 || c.BinNodes > maxGauss:
		return fmt.Errorf("inventory: bin nodes %d not in [1, %d]", c.BinNodes, maxGauss)
	case c.Breaks < 0 || c.Breaks > maxBreaks:
		return fmt.Errorf("inventory: breaks %d not in [0, %d]", c.Breaks, maxBreaks)
	case !(c.Tolerance >= 1e-15 && c.Tolerance <= 1e-3):
		return fmt.Errorf("inventory: tolerance %v is not in [1e-15, 1e-3]", c.Tolerance)
	case c.MaxCapacity < 1:
		return fmt.Errorf("inventory: max capacity %d is below 1", c.MaxCapacity)
	case !(c.MaxRate > 0) || math.IsInf(c.MaxRate, 0):
		return fmt.Errorf("inventory: max rate %v is not a finite number > 0", c.MaxRate)
	}
	return nil
}

// maxBreaks bounds Config.Breaks.
const maxBreaks = 24
