package cvi

import (
	"fmt"

	"github.com/dcgpd/dcgpd/filter"
)

// OnlineState is everything an Online carries from one bin to the next:
// the filter head and the site the next refinement starts from. Restoring
// it into an Online of the same model makes every later bin compute
// exactly what the saved Online would have.
type OnlineState struct {
	Filter filter.State
	// Warm reports whether Nat1 and Nat2 hold the last refined site,
	// observed at PrevObserved; the next refinement starts from it.
	Warm         bool
	Nat1, Nat2   []float64
	PrevObserved []bool
}

// Save returns a deep copy of the online state.
func (o *Online) Save() OnlineState {
	return OnlineState{Filter: o.filt.Save(), Warm: o.warm,
		Nat1: append([]float64(nil), o.l1...), Nat2: append([]float64(nil), o.l2...),
		PrevObserved: append([]bool(nil), o.prevObserved...)}
}

// Restore replaces the online state by s, which must come from an Online
// of the same model and likelihood layout. On error nothing changes.
func (o *Online) Restore(s OnlineState) error {
	if len(s.Nat1) != len(o.l1) || len(s.Nat2) != len(o.l2) || len(s.PrevObserved) != len(o.prevObserved) {
		return fmt.Errorf("cvi: online state has site sizes %d, %d and %d products, want %d, %d and %d",
			len(s.Nat1), len(s.Nat2), len(s.PrevObserved), len(o.l1), len(o.l2), len(o.prevObserved))
	}
	if !finite(s.Nat1) || !finite(s.Nat2) {
		return fmt.Errorf("cvi: online state site is not finite")
	}
	if err := o.filt.Restore(s.Filter); err != nil {
		return err
	}
	o.warm = s.Warm
	copy(o.l1, s.Nat1)
	copy(o.l2, s.Nat2)
	copy(o.prevObserved, s.PrevObserved)
	return nil
}
