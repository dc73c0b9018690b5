package spec

import "github.com/dcgpd/dcgpd/cvi"

// Boundary is where observations as received meet the model: the
// likelihood sees y − m and u − m for the prior mean m of the cell, and
// each cell carries its level for level-dependent noise (model.level_noise):
// the prior mean when there is one, otherwise model.levels. Fit, learning,
// the daemon's online step, its re-smoothing window and its forecasts all
// go through it, so they agree cell for cell. The zero value changes
// nothing.
type Boundary struct {
	Mean   *Profile
	Levels *Levels
}

// Boundary returns b's boundary; it shares b's read-only values.
func (b *Built) Boundary() Boundary {
	c := Boundary{Mean: b.Mean}
	if b.Levels.Source != "" {
		c.Levels = &b.Levels
	}
	return c
}

// Prepare turns one bin's observations at model time t, in place, into
// what the likelihood sees.
func (c Boundary) Prepare(t float64, obs []cvi.Obs) {
	if c.Mean != nil {
		c.Mean.Shift(t, obs)
		return
	}
	if c.Levels != nil {
		for k := range obs {
			obs[k].Level = c.Levels.At(t, k)
		}
	}
}

// PrepareData returns a prepared copy of d (d itself when there is nothing
// to do).
func (c Boundary) PrepareData(d *cvi.Data) *cvi.Data {
	if c.Mean == nil && c.Levels == nil {
		return d
	}
	out := &cvi.Data{Times: d.Times, NP: d.NP, Obs: append([]cvi.Obs(nil), d.Obs...)}
	for n, t := range d.Times {
		c.Prepare(t, out.Bin(n))
	}
	return out
}

// MeanAt returns the prior mean of product k at model time t (0 without
// one).
func (c Boundary) MeanAt(t float64, k int) float64 { return c.Mean.At(t, k) }

// LevelAt returns the level of product k's cell at model time t: the level
// a forecast of that cell is published with.
func (c Boundary) LevelAt(t float64, k int) float64 {
	if c.Mean != nil {
		return c.Mean.At(t, k)
	}
	return c.Levels.At(t, k)
}
