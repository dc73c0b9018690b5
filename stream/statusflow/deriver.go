package statusflow

import (
	"fmt"
	"slices"
	"time"
)

// Stats counts what a Deriver saw.
type Stats struct {
	Samples    int            // accepted, duplicates included
	Duplicates int            // repeats of a station's last sample
	Refused    map[string]int // by reason
	Gaps       int            // intervals longer than MaxGap
	TruckRuns  int            // runs detected as truck moves
	// VehicleMismatch counts samples whose vehicle ids are not as many
	// as their bikes (the ids are used all the same).
	VehicleMismatch int
	// DockChanges counts intervals where bikes + docks changed (docks
	// added, removed or broken); the flows still come from the bikes.
	DockChanges int
}

// Deriver derives per-bin pickups and returns of stations from their
// status samples. It is not safe for concurrent use.
type Deriver struct {
	cfg       Config
	stations  map[string]*station
	order     []string // station ids, sorted
	watermark time.Time
	stats     Stats
	scratch   []string // the incoming sample's ids, sorted
}

// New returns a Deriver for a valid cfg.
func New(cfg Config) (*Deriver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Deriver{cfg: cfg, stations: map[string]*station{}, stats: Stats{Refused: map[string]int{}}}, nil
}

// Stats returns a copy of the counts so far.
func (d *Deriver) Stats() Stats {
	s := d.stats
	s.Refused = make(map[string]int, len(d.stats.Refused))
	for k, v := range d.stats.Refused {
		s.Refused[k] = v
	}
	return s
}

// Add takes one sample. A station's samples must come in time order and
// after the last Advance; a sample equal to the station's last one
// (same time and counts) is a duplicate, counted and ignored. A refused
// sample returns a *SampleError, is counted, and leaves the state as it
// was.
func (d *Deriver) Add(s Sample) error {
	if err := d.add(&s); err != nil {
		d.stats.Refused[err.Reason]++
		return err
	}
	d.stats.Samples++
	return nil
}

func (d *Deriver) add(s *Sample) *SampleError {
	if err := check(s, d.cfg.Origin); err != nil {
		return err
	}
	d.scratch = sortedIDs(d.scratch, s.Vehicles)
	s.Vehicles = d.scratch
	if !s.At.After(d.watermark) {
		return refuse(ReasonLate, "station %q: sample at %s is not after the watermark %s", s.Station, s.At.Format(time.RFC3339), d.watermark.Format(time.RFC3339))
	}
	st := d.stations[s.Station]
	if st == nil {
		st = newStation(&d.cfg, s)
		d.stations[s.Station] = st
		i, _ := slices.BinarySearch(d.order, s.Station)
		d.order = slices.Insert(d.order, i, s.Station)
		st.closedAt(&d.cfg, s)
		return nil
	}
	switch {
	case s.At.Before(st.last.At):
		return refuse(ReasonOutOfOrder, "station %q: sample at %s before the last at %s", s.Station, s.At.Format(time.RFC3339), st.last.At.Format(time.RFC3339))
	case s.At.Equal(st.last.At) && sameState(&st.last, s):
		d.stats.Duplicates++
		return nil
	case s.At.Equal(st.last.At):
		return refuse(ReasonConflict, "station %q: two different samples at %s", s.Station, s.At.Format(time.RFC3339))
	}
	d.step(st, s)
	return nil
}

// step takes the interval from st's last sample to s.
func (d *Deriver) step(st *station, s *Sample) {
	cfg := &d.cfg
	if s.HasVehicles && len(s.Vehicles) != s.Bikes {
		d.stats.VehicleMismatch++
	}
	if s.Docks >= 0 && st.last.Docks >= 0 && s.Bikes+s.Docks != st.last.Bikes+st.last.Docks {
		d.stats.DockChanges++
	}
	st.closedAt(cfg, s)
	if s.At.Sub(st.last.At) > cfg.MaxGap {
		d.stats.Gaps++
		for side := range st.runs {
			d.countTruck(closeRun(cfg, &st.runs[side], side))
		}
	} else {
		iv := newInterval(&st.last, s)
		st.cover(cfg, iv.t0, iv.t1)
		st.pending = append(st.pending, iv)
		rate := st.rate(iv.t0)
		for side := range st.runs {
			d.countTruck(feed(cfg, &st.runs[side], iv, side, rate[side]))
			if !iv.closed[side] {
				st.flow[side] += float64(iv.n[side])
			}
		}
	}
	st.flush(cfg)
	st.keep(s)
}

func (d *Deriver) countTruck(truck bool) {
	if truck {
		d.stats.TruckRuns++
	}
}

// sameState compares two samples whose ids are sorted.
func sameState(a, b *Sample) bool {
	if a.Bikes != b.Bikes || a.Docks != b.Docks || a.Renting != b.Renting || a.Returning != b.Returning || a.HasVehicles != b.HasVehicles {
		return false
	}
	if !b.HasVehicles {
		return true
	}
	l, r := setDiff(a.Vehicles, b.Vehicles)
	return l == 0 && r == 0
}

// maxEmit bounds the bins one Advance may emit per station.
const maxEmit = 1 << 20

// Advance declares that no sample at or before until will come, and
// returns every bin of every station that ends at or before
// until − max(MaxGap, TruckWindow) and has not been returned yet, by
// station then time. A station's bins start with the bin of its first
// sample; a station that stopped reporting gets unobserved bins.
func (d *Deriver) Advance(until time.Time) ([]Bin, error) {
	if !until.After(d.watermark) {
		return nil, nil
	}
	if until.Before(d.cfg.Origin) || until.Sub(d.cfg.Origin) >= maxSpan {
		return nil, fmt.Errorf("statusflow: advance to %s: outside the grid (origin %s)", until.Format(time.RFC3339), d.cfg.Origin.Format(time.RFC3339))
	}
	last := int64(-1) // the last bin to emit: its end is at or before until − lag
	if u := until.Add(-d.cfg.lag()); !u.Before(d.cfg.Origin) {
		last = floorBin(&d.cfg, u) - 1
	}
	for _, id := range d.order {
		if n := last - d.stations[id].next + 1; n > maxEmit {
			return nil, fmt.Errorf("statusflow: advance to %s would emit %d bins of station %q (at most %d at once)", until.Format(time.RFC3339), n, id, maxEmit)
		}
	}
	d.watermark = until
	var bins []Bin
	for _, id := range d.order {
		bins = d.emit(d.stations[id], until, last, bins)
	}
	return bins, nil
}

// emit closes st's runs that can no longer grow and appends its bins up
// to index last.
func (d *Deriver) emit(st *station, until time.Time, last int64, bins []Bin) []Bin {
	for side := range st.runs {
		r := &st.runs[side]
		if len(r.members) > 0 && !r.start.Add(d.cfg.TruckWindow).After(until) {
			d.countTruck(closeRun(&d.cfg, r, side))
		}
	}
	st.flush(&d.cfg)
	for ; st.next <= last; st.next++ {
		a := st.bins[st.next]
		if a == nil {
			a = &acc{}
		}
		bins = append(bins, a.bin(&d.cfg, st.id, st.next))
		delete(st.bins, st.next)
	}
	return bins
}
