package cvi

import (
	"fmt"
	"math"
)

// Data is a batch of observations on a grid of N time bins × NP products.
// Obs[n·NP + k] is product k in bin n; a NaN Y marks a cell with no
// observation (its latent demand is still estimated).
type Data struct {
	Times []float64
	NP    int
	Obs   []Obs
}

// Observed reports whether cell i holds an observation.
func (d *Data) Observed(i int) bool { return !math.IsNaN(d.Obs[i].Y) }

// Bin returns the NP observations of bin n.
func (d *Data) Bin(n int) []Obs { return d.Obs[n*d.NP : (n+1)*d.NP] }

// Validate checks shapes, times and every observed cell.
func (d *Data) Validate() error {
	if d.NP < 1 {
		return fmt.Errorf("cvi: data needs at least one product, got %d", d.NP)
	}
	if len(d.Obs) != len(d.Times)*d.NP {
		return fmt.Errorf("cvi: %d observations for %d bins × %d products", len(d.Obs), len(d.Times), d.NP)
	}
	for n, t := range d.Times {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("cvi: time of bin %d is not finite", n)
		}
		if n > 0 && !(t > d.Times[n-1]) {
			return fmt.Errorf("cvi: bin times not strictly increasing at bin %d (%v after %v)", n, t, d.Times[n-1])
		}
	}
	for i, o := range d.Obs {
		if math.IsNaN(o.Y) {
			if math.IsNaN(o.Supply) || math.IsInf(o.Supply, -1) {
				return fmt.Errorf("cvi: bin %d product %d: supply %v is not a number", i/d.NP, i%d.NP, o.Supply)
			}
			continue
		}
		if err := o.Validate(); err != nil {
			return fmt.Errorf("bin %d product %d: %w", i/d.NP, i%d.NP, err)
		}
	}
	return nil
}

// observedBins returns the indices of the bins with at least one
// observation: only they carry sites, so inference runs on them alone.
func (d *Data) observedBins() []int {
	var idx []int
	for n := range d.Times {
		for k := 0; k < d.NP; k++ {
			if d.Observed(n*d.NP + k) {
				idx = append(idx, n)
				break
			}
		}
	}
	return idx
}
