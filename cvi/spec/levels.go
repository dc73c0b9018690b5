package spec

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/cvi"
)

// LevelsBinOfDay is the level source "bin-of-day" of [model.levels].
const LevelsBinOfDay = "bin-of-day"

// maxLevelBins bounds the bins of a level period (a week of minutes).
const maxLevelBins = 7 * 24 * 60

// Levels is a source of the cells' levels (cvi.Obs.Level) for
// level-dependent noise (model.level_noise) that needs no prior mean: with
// Source "bin-of-day" the level of product k in a bin is the mean of k's
// observed values (censored cells count with their observed value) in the
// same bin of the period (the hour of the day for Period 24 and hourly
// bins) over the data learning sees. Learn computes Values when they are
// empty; `fit --save-model` writes them, and a model file's Values are
// used as they are.
type Levels struct {
	// Source is "" (no levels: every level 0) or "bin-of-day".
	Source string `toml:"source"`
	// Period (default 24, the data's time unit: hours for timestamps) and
	// Step, the bin width (default the data's median step).
	Period float64 `toml:"period"`
	Step   float64 `toml:"step"`
	// Values[k][j] is product k's level in bin j of the period.
	Values [][]float64 `toml:"values"`
}

// bins returns the number of bins in the period.
func (l *Levels) bins() int { return int(math.Round(l.Period / l.Step)) }

// validate checks the table without data.
func (l *Levels) validate() error {
	switch l.Source {
	case "":
		if l.Period != 0 || l.Step != 0 || len(l.Values) != 0 {
			return errors.New("model.levels: period, step and values need source = \"bin-of-day\"")
		}
		return nil
	case LevelsBinOfDay:
	default:
		return fmt.Errorf("model.levels.source %q: want \"bin-of-day\" (or omit the table)", l.Source)
	}
	if err := finite("model.levels: period and step", l.Period, l.Step); err != nil {
		return err
	}
	if l.Period < 0 || l.Step < 0 {
		return fmt.Errorf("model.levels: period %v and step %v must be > 0 (0: the default)", l.Period, l.Step)
	}
	if len(l.Values) == 0 {
		return nil
	}
	if l.Period == 0 || l.Step == 0 {
		return errors.New("model.levels.values need period and step")
	}
	nb := l.bins()
	if nb < 1 || nb > maxLevelBins || math.Abs(float64(nb)*l.Step-l.Period) > 1e-9*l.Period {
		return fmt.Errorf("model.levels: period %v is not 1 to %d steps of %v", l.Period, maxLevelBins, l.Step)
	}
	for k, row := range l.Values {
		if len(row) != nb {
			return fmt.Errorf("model.levels.values[%d] has %d values, want %d (period / step)", k, len(row), nb)
		}
		if err := finite(fmt.Sprintf("model.levels.values[%d]", k), row...); err != nil {
			return err
		}
	}
	return nil
}

// fill computes the Values from d when they are empty (without a source
// it does nothing); Built.Boundary sets the cells' levels.
func (l *Levels) fill(d *cvi.Data, sum Summary) error {
	if l.Source == "" {
		return nil
	}
	if len(l.Values) == 0 {
		return l.learn(d, sum.MedianStep)
	}
	if len(l.Values) != d.NP {
		return fmt.Errorf("model.levels: values for %d products, the data have %d", len(l.Values), d.NP)
	}
	return nil
}

// learn sets the defaults and the bin-of-period means of d's observed
// values; a bin without observations gets the product's overall mean (0
// for a product never observed).
func (l *Levels) learn(d *cvi.Data, medianStep float64) error {
	if l.Period == 0 {
		l.Period = 24
	}
	if l.Step == 0 {
		l.Step = medianStep
	}
	if !(l.Step > 0) {
		return fmt.Errorf("model.levels: no bin width (step) from %d bins", len(d.Times))
	}
	nb := l.bins()
	if nb < 1 || nb > maxLevelBins || math.Abs(float64(nb)*l.Step-l.Period) > 1e-9*l.Period {
		return fmt.Errorf("model.levels: period %v is not 1 to %d steps of %v", l.Period, maxLevelBins, l.Step)
	}
	sums, counts := make([]float64, d.NP*nb), make([]float64, d.NP*nb)
	for n, t := range d.Times {
		j := l.bin(t)
		for k, o := range d.Bin(n) {
			if !math.IsNaN(o.Y) {
				sums[k*nb+j] += o.Y
				counts[k*nb+j]++
			}
		}
	}
	l.Values = make([][]float64, d.NP)
	for k := range l.Values {
		row := make([]float64, nb)
		var all, cnt float64
		for j := range row {
			all += sums[k*nb+j]
			cnt += counts[k*nb+j]
		}
		for j := range row {
			switch {
			case counts[k*nb+j] > 0:
				row[j] = sums[k*nb+j] / counts[k*nb+j]
			case cnt > 0:
				row[j] = all / cnt
			}
		}
		l.Values[k] = row
	}
	return nil
}

// bin returns the bin of the period that time t falls in (the prior
// mean's cell arithmetic).
func (l *Levels) bin(t float64) int { return periodCell(t, l.Step, l.bins()) }

// At returns product k's level at time t: 0 without a source or values.
func (l *Levels) At(t float64, k int) float64 {
	if l == nil || l.Source == "" || k < 0 || k >= len(l.Values) || math.IsNaN(t) || math.IsInf(t, 0) {
		return 0
	}
	return l.Values[k][l.bin(t)]
}
