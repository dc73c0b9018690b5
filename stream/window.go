package stream

import (
	"time"

	"github.com/dcgpd/dcgpd/cvi"
)

// windowBin is one processed bin kept for re-smoothing: its observations
// and the site inference settled on.
type windowBin struct {
	Index      int64
	Start      time.Time
	T          float64 // model time (hours since the Unix epoch)
	Obs        []cvi.Obs
	Nat1, Nat2 []float64
	Observed   bool
}

// window is a ring of the last cap processed bins; memory is bounded by
// its capacity, never by the history.
type window struct {
	bins  []windowBin
	head  int // position of the oldest bin
	count int
}

func newWindow(capacity int) *window { return &window{bins: make([]windowBin, capacity)} }

// push appends b, returning the evicted oldest bin (ok false if none).
func (w *window) push(b windowBin) (evicted windowBin, ok bool) {
	if w.count == len(w.bins) {
		evicted, ok = w.bins[w.head], true
		w.bins[w.head] = b
		w.head = (w.head + 1) % len(w.bins)
		return evicted, ok
	}
	w.bins[(w.head+w.count)%len(w.bins)] = b
	w.count++
	return windowBin{}, false
}

// at returns the i-th oldest bin.
func (w *window) at(i int) *windowBin { return &w.bins[(w.head+i)%len(w.bins)] }

// find returns the bin with index idx, or nil.
func (w *window) find(idx int64) *windowBin {
	if w.count == 0 {
		return nil
	}
	first := w.at(0).Index
	i := int(idx - first)
	if i < 0 || i >= w.count {
		return nil
	}
	if b := w.at(i); b.Index == idx {
		return b
	}
	return nil
}

// copyFrom returns deep copies of the bins from position i on.
func (w *window) copyFrom(i int) []windowBin {
	out := make([]windowBin, 0, w.count-i)
	for ; i < w.count; i++ {
		b := *w.at(i)
		b.Obs = append([]cvi.Obs(nil), b.Obs...)
		b.Nat1 = append([]float64(nil), b.Nat1...)
		b.Nat2 = append([]float64(nil), b.Nat2...)
		out = append(out, b)
	}
	return out
}
