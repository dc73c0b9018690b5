package snapshot

import (
	"errors"
	"fmt"
	"math"
)

// Check verifies that the snapshot is consistent in itself: sizes agree
// with the number of products, bins are in order and every number the
// inference reads is finite. Whether it fits a configured model is the
// daemon's check.
func (m *Model) Check() error {
	np := len(m.Products)
	switch {
	case m.Name == "":
		return errors.New("no model name")
	case np == 0:
		return errors.New("no products")
	case m.BinWidth <= 0:
		return fmt.Errorf("bin width %v", m.BinWidth)
	case m.Revision < 0 || m.Processed < 0 || m.SinceResmooth < 0:
		return errors.New("negative counter")
	case !finite(m.ModelParams) || !finite(m.LikParams):
		return errors.New("hyperparameters are not finite")
	case m.MeanScale != nil && (len(m.MeanScale) != np || !positive(m.MeanScale)):
		return fmt.Errorf("prior mean level: %d values for %d products, each finite and > 0", len(m.MeanScale), np)
	}
	if err := m.Online.check(np); err != nil {
		return fmt.Errorf("filter head: %w", err)
	}
	if err := m.Tail.Filter.check(); err != nil {
		return fmt.Errorf("window start: %w", err)
	}
	if err := checkBins(m.Window, np); err != nil {
		return fmt.Errorf("window: %w", err)
	}
	prev := int64(math.MinInt64)
	for _, o := range m.Assembler.Open {
		if o.Index <= prev || len(o.Obs) != np || len(o.Have) != np {
			return fmt.Errorf("open bin %d: out of order or %d observations for %d products", o.Index, len(o.Obs), np)
		}
		prev = o.Index
	}
	if j := m.Job; j != nil {
		if err := checkBins(j.Bins, np); err != nil {
			return fmt.Errorf("re-smooth job: %w", err)
		}
		if j.Start != nil {
			if err := j.Start.check(); err != nil {
				return fmt.Errorf("re-smooth job start: %w", err)
			}
		}
		if !finite(j.ModelParams) || !finite(j.LikParams) {
			return errors.New("re-smooth job hyperparameters are not finite")
		}
	}
	return nil
}

func (f *Filter) check() error {
	if len(f.Mean) != len(f.Cov) {
		return fmt.Errorf("%d means for %d covariances", len(f.Mean), len(f.Cov))
	}
	if math.IsNaN(f.Time) || math.IsInf(f.Time, 0) {
		return errors.New("time is not finite")
	}
	for c := range f.Mean {
		d := len(f.Mean[c])
		if len(f.Cov[c]) != d*d {
			return fmt.Errorf("chain %d: state %d with %d covariance entries", c, d, len(f.Cov[c]))
		}
		if !finite(f.Mean[c]) || !finite(f.Cov[c]) {
			return fmt.Errorf("chain %d is not finite", c)
		}
	}
	return nil
}

func (o *Online) check(np int) error {
	if err := o.Filter.check(); err != nil {
		return err
	}
	if len(o.Nat1) != np || (len(o.Nat2) != np && len(o.Nat2) != np*np) || len(o.PrevObserved) != np {
		return fmt.Errorf("site sizes %d, %d for %d products", len(o.Nat1), len(o.Nat2), np)
	}
	if !finite(o.Nat1) || !finite(o.Nat2) {
		return errors.New("site is not finite")
	}
	return nil
}

func checkBins(bins []Bin, np int) error {
	for i, b := range bins {
		if i > 0 && b.Index <= bins[i-1].Index {
			return fmt.Errorf("bin %d after bin %d", b.Index, bins[i-1].Index)
		}
		if len(b.Obs) != np || len(b.Nat1) != np || (len(b.Nat2) != np && len(b.Nat2) != np*np) {
			return fmt.Errorf("bin %d: %d observations and sites %d, %d for %d products", b.Index, len(b.Obs), len(b.Nat1), len(b.Nat2), np)
		}
		if !finite(b.Nat1) || !finite(b.Nat2) || math.IsNaN(b.T) || math.IsInf(b.T, 0) {
			return fmt.Errorf("bin %d is not finite", b.Index)
		}
	}
	return nil
}

func finite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func positive(v []float64) bool {
	for _, x := range v {
		if !(x > 0) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
