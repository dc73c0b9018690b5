package rebalance

import (
	"sort"
	"sync"
	"time"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// sample is one station's state at one snapshot, as the two flows see
// it.
type sample struct {
	at time.Time
	// fresh: the station had reported within MaxReportAge of at, so the
	// sample is evidence.
	fresh bool
	// pickupsBlocked: no bike could be rented (empty, not renting or not
	// installed); returnsBlocked: no bike could be returned (full, not
	// returning or not installed).
	pickupsBlocked, returnsBlocked bool
	status                         stationstatus.Sample
}

// Tracker keeps the recent status samples of a system's stations. It is
// safe for concurrent use: the status consumer writes, the two models'
// runners and the risk step read.
type Tracker struct {
	cfg      Config
	mu       sync.RWMutex
	stations map[string][]sample // time order; only the models' stations
	names    map[string]string   // the newest name a sample gave
	newest   time.Time
}

// NewTracker tracks the given stations (the models' products); samples
// of other stations are ignored.
func NewTracker(cfg Config, stations []string) *Tracker {
	t := &Tracker{cfg: cfg, stations: make(map[string][]sample, len(stations)), names: map[string]string{}}
	for _, s := range stations {
		t.stations[s] = nil
	}
	return t
}

// IngestResult counts what one message did.
type IngestResult struct {
	// Kept samples are stored; Ignored are of stations no model has;
	// Stale had not reported for MaxReportAge (stored, as no evidence).
	Kept, Ignored, Stale int
}

// Ingest stores a decoded status message's samples (a repeat of a
// station's snapshot replaces it).
func (t *Tracker) Ingest(m *stationstatus.Message) IngestResult {
	var res IngestResult
	t.mu.Lock()
	defer t.mu.Unlock()
	if m.At.After(t.newest) {
		t.newest = m.At
	}
	cutoff := t.newest.Add(-t.cfg.Retention)
	for _, s := range m.Stations {
		list, ok := t.stations[s.Station]
		if !ok {
			res.Ignored++
			continue
		}
		if s.Name != "" {
			t.names[s.Station] = s.Name
		}
		fresh := m.At.Sub(s.LastReported) <= t.cfg.MaxReportAge
		if !fresh {
			res.Stale++
		}
		docksBlocked := s.DocksAvailable != nil && *s.DocksAvailable == 0
		smp := sample{at: m.At, fresh: fresh, status: s,
			pickupsBlocked: !s.Installed || !s.Renting || s.BikesAvailable == 0,
			returnsBlocked: !s.Installed || !s.Returning || docksBlocked}
		i := sort.Search(len(list), func(i int) bool { return !list[i].at.Before(m.At) })
		switch {
		case i < len(list) && list[i].at.Equal(m.At):
			list[i] = smp
		default:
			list = append(list, sample{})
			copy(list[i+1:], list[i:])
			list[i] = smp
		}
		// Drop samples older than the retention, keeping the last one
		// before it (its state holds into the retained span).
		drop := sort.Search(len(list), func(i int) bool { return !list[i].at.Before(cutoff) })
		if drop > 1 {
			list = append(list[:0], list[drop-1:]...)
		}
		t.stations[s.Station] = list
		res.Kept++
	}
	return res
}

// Blocked is the part of a bin a station was blocked for each flow.
type Blocked struct {
	// Known: fresh samples covered at least MinCoverage of the bin.
	Known bool
	// Coverage is the part of the bin fresh samples covered.
	Coverage float64
	// Pickups and Returns are the blocked parts of the covered time.
	Pickups, Returns float64
}

// Blocked returns the station's blocked parts of [start, end) from the
// samples held: each fresh sample's state holds until the next sample or
// MaxHold, whichever is first.
func (t *Tracker) Blocked(station string, start, end time.Time) Blocked {
	t.mu.RLock()
	defer t.mu.RUnlock()
	list := t.stations[station]
	width := end.Sub(start)
	if width <= 0 {
		return Blocked{}
	}
	// The last sample at or before start holds into the bin.
	i := sort.Search(len(list), func(i int) bool { return list[i].at.After(start) })
	if i > 0 {
		i--
	}
	var covered, pickups, returns time.Duration
	for ; i < len(list) && list[i].at.Before(end); i++ {
		s := &list[i]
		if !s.fresh {
			continue
		}
		until := s.at.Add(t.cfg.MaxHold)
		if i+1 < len(list) && list[i+1].at.Before(until) {
			until = list[i+1].at
		}
		from := s.at
		if from.Before(start) {
			from = start
		}
		if until.After(end) {
			until = end
		}
		if d := until.Sub(from); d > 0 {
			covered += d
			if s.pickupsBlocked {
				pickups += d
			}
			if s.returnsBlocked {
				returns += d
			}
		}
	}
	b := Blocked{Coverage: float64(covered) / float64(width)}
	if covered == 0 || b.Coverage < t.cfg.MinCoverage {
		return b
	}
	b.Known = true
	b.Pickups = float64(pickups) / float64(covered)
	b.Returns = float64(returns) / float64(covered)
	return b
}

// Latest returns a station's newest fresh sample at or before at.
func (t *Tracker) Latest(station string, at time.Time) (stationstatus.Sample, time.Time, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	list := t.stations[station]
	i := sort.Search(len(list), func(i int) bool { return list[i].at.After(at) })
	for i--; i >= 0; i-- {
		if list[i].fresh {
			return list[i].status, list[i].at, true
		}
	}
	return stationstatus.Sample{}, time.Time{}, false
}

// Name returns the station's name from the newest sample that gave one
// ("" when none did).
func (t *Tracker) Name(station string) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.names[station]
}

// Newest returns the time of the newest status message taken in (zero
// before the first).
func (t *Tracker) Newest() time.Time {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.newest
}
