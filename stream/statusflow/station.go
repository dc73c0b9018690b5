package statusflow

import (
	"math"
	"time"
)

// station is one station's state in a Deriver.
type station struct {
	id      string
	last    Sample
	ids     []string // last.Vehicles, sorted, owned
	runs    [2]run
	pending []*interval
	bins    map[int64]*acc
	next    int64 // the first bin not yet emitted
	// flow is each side's exponentially weighted count of bikes moved
	// (time constant rateTau) at flowAt, since first.
	flow          [2]float64
	flowAt, first time.Time
}

// rateTau is the time constant of a station's recent rate.
const rateTau = time.Hour

// rate brings the weighted counts to t and returns each side's recent
// rate in bikes an hour: the weighted count over the weighted time since
// the first sample.
func (st *station) rate(t time.Time) [2]float64 {
	decay := math.Exp(-t.Sub(st.flowAt).Hours() / rateTau.Hours())
	st.flow[out] *= decay
	st.flow[in] *= decay
	st.flowAt = t
	span := rateTau.Hours() * -math.Expm1(-t.Sub(st.first).Hours()/rateTau.Hours())
	if span <= 0 {
		return [2]float64{}
	}
	return [2]float64{st.flow[out] / span, st.flow[in] / span}
}

func newStation(cfg *Config, s *Sample) *station {
	st := &station{id: s.Station, bins: map[int64]*acc{}, next: floorBin(cfg, s.At), flowAt: s.At, first: s.At}
	st.keep(s)
	return st
}

// keep makes s the station's last sample, owning a sorted copy of its ids.
func (st *station) keep(s *Sample) {
	st.ids = sortedIDs(st.ids, s.Vehicles)
	st.last = *s
	st.last.Vehicles = st.ids
}

// floorBin is the index of the bin [start, end) holding t; endBin that of
// the bin (start, end] holding t.
func floorBin(cfg *Config, t time.Time) int64 { return int64(t.Sub(cfg.Origin) / cfg.Bin) }

func endBin(cfg *Config, t time.Time) int64 {
	d := t.Sub(cfg.Origin)
	k := int64(d / cfg.Bin)
	if d%cfg.Bin == 0 {
		k--
	}
	return k
}

func (st *station) acc(k int64) *acc {
	a := st.bins[k]
	if a == nil {
		a = &acc{}
		st.bins[k] = a
	}
	return a
}

// cover adds the time (t0, t1] to the bins it overlaps (those not yet
// emitted).
func (st *station) cover(cfg *Config, t0, t1 time.Time) {
	for k := max(floorBin(cfg, t0), st.next); k <= endBin(cfg, t1); k++ {
		start := cfg.Origin.Add(time.Duration(k) * cfg.Bin)
		lo, hi := maxTime(t0, start), minTime(t1, start.Add(cfg.Bin))
		if hi.After(lo) {
			st.acc(k).covered += hi.Sub(lo)
		}
	}
}

// closedAt marks the bin of s when the station is closed either way.
func (st *station) closedAt(cfg *Config, s *Sample) {
	if (!s.Renting || !s.Returning) && endBin(cfg, s.At) >= st.next {
		st.acc(endBin(cfg, s.At)).closed = true
	}
}

// flush moves the decided pending intervals into their bins.
func (st *station) flush(cfg *Config) {
	keep := st.pending[:0]
	for _, iv := range st.pending {
		if !iv.done[out] || !iv.done[in] {
			keep = append(keep, iv)
			continue
		}
		k := endBin(cfg, iv.t1)
		if k < st.next {
			continue // cannot happen: the lag keeps emitted bins clear
		}
		a := st.acc(k)
		a.counted++
		w := 1.0
		if iv.byID {
			a.byID++
			w = 1 / (2 * float64(iv.bikes0+1))
		}
		a.items = append(a.items, hiddenItem{hours: iv.t1.Sub(iv.t0).Hours(), weight: w})
		for side, dst := range [2][2]*int{{&a.pickups, &a.movedOut}, {&a.returns, &a.movedIn}} {
			if iv.truck[side] || iv.closed[side] {
				*dst[1] += iv.n[side]
			} else {
				*dst[0] += iv.n[side]
			}
			a.truck = a.truck || iv.truck[side]
		}
	}
	clear(st.pending[len(keep):])
	st.pending = keep
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
