package evsupply

import (
	"sort"
	"sync"
	"time"

	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// Tracker keeps the recent EVSE statuses of a model's sites and the
// poller's polls. It is safe for concurrent use: the status consumer
// writes, the model's runner reads.
type Tracker struct {
	cfg    Config
	mu     sync.RWMutex
	sites  map[string]map[string][]ocpi.StatusEvent // site → EVSE → changes in time order
	polls  []time.Time                              // time order
	newest time.Time
}

// NewTracker tracks the given sites (the model's products); statuses of
// other sites are ignored.
func NewTracker(cfg Config, sites []string) *Tracker {
	t := &Tracker{cfg: cfg, sites: make(map[string]map[string][]ocpi.StatusEvent, len(sites))}
	for _, s := range sites {
		t.sites[s] = map[string][]ocpi.StatusEvent{}
	}
	return t
}

// Config returns the tracker's configuration.
func (t *Tracker) Config() Config { return t.cfg }

// Ingest outcomes.
const (
	OutcomeKept    = "kept"    // a status stored
	OutcomePoll    = "poll"    // a poll marker stored
	OutcomeIgnored = "ignored" // a status of a site the model does not have
)

// Ingest stores a decoded message (a repeat replaces what it repeats) and
// says what it did.
func (t *Tracker) Ingest(m *ocpi.StatusMessage) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m.Kind == ocpi.KindPoll {
		if m.At.After(t.newest) {
			t.newest = m.At
		}
		t.polls = insertTime(t.polls, m.At)
		cutoff := t.cutoff()
		t.polls = trim(t.polls, cutoff, func(p time.Time) time.Time { return p })
		for _, evses := range t.sites {
			for id, list := range evses {
				evses[id] = trim(list, cutoff, func(e ocpi.StatusEvent) time.Time { return e.At })
			}
		}
		return OutcomePoll
	}
	evses, ok := t.sites[m.Site]
	if !ok {
		return OutcomeIgnored
	}
	list := evses[m.EVSE]
	e := m.Event()
	i := sort.Search(len(list), func(i int) bool { return !list[i].At.Before(e.At) })
	if i < len(list) && list[i].At.Equal(e.At) {
		list[i] = e
	} else {
		list = append(list, ocpi.StatusEvent{})
		copy(list[i+1:], list[i:])
		list[i] = e
	}
	evses[m.EVSE] = trim(list, t.cutoff(), func(e ocpi.StatusEvent) time.Time { return e.At })
	return OutcomeKept
}

// cutoff is the oldest time kept (the newest poll less the retention).
func (t *Tracker) cutoff() time.Time { return t.newest.Add(-t.cfg.Retention) }

// trim drops the entries before cutoff but the last of them (its state
// holds into the kept span).
func trim[T any](list []T, cutoff time.Time, at func(T) time.Time) []T {
	drop := sort.Search(len(list), func(i int) bool { return !at(list[i]).Before(cutoff) })
	if drop > 1 {
		list = append(list[:0], list[drop-1:]...)
	}
	return list
}

func insertTime(list []time.Time, at time.Time) []time.Time {
	i := sort.Search(len(list), func(i int) bool { return !list[i].Before(at) })
	if i < len(list) && list[i].Equal(at) {
		return list
	}
	list = append(list, time.Time{})
	copy(list[i+1:], list[i:])
	list[i] = at
	return list
}

// Bin is a site's status in one bin.
type Bin struct {
	// Known: the polls covered at least MinCoverage of the bin and some
	// status of the site is held.
	Known bool
	// Coverage is the part of the bin the polls covered.
	Coverage float64
	// Full is the part of the covered time the site had no EVSE
	// available.
	Full float64
	// Supply is the EVSEs available at the bin's start plus those that
	// became available during it.
	Supply int
}

// Supply returns site's status in [start, end).
func (t *Tracker) Supply(site string, start, end time.Time) Bin {
	t.mu.RLock()
	defer t.mu.RUnlock()
	width := end.Sub(start)
	evses := t.sites[site]
	if width <= 0 || len(evses) == 0 {
		return Bin{}
	}
	var events []ocpi.StatusEvent
	for _, list := range evses {
		// The last change at or before start, and those in the bin.
		i := sort.Search(len(list), func(i int) bool { return list[i].At.After(start) })
		if i > 0 {
			i--
		}
		for ; i < len(list) && list[i].At.Before(end); i++ {
			events = append(events, list[i])
		}
	}
	whole, err := ocpi.SupplyFromStatus(events, start, width, 1)
	if err != nil || !whole[0].Known {
		return Bin{}
	}
	b := Bin{Supply: whole[0].Supply}
	var covered, full time.Duration
	// The polls' covered stretches within the bin, contiguous ones
	// merged (regular polls give one).
	var spans [][2]time.Time
	k := sort.Search(len(t.polls), func(i int) bool { return t.polls[i].After(start) })
	for ; k < len(t.polls); k++ {
		p := t.polls[k]
		lo := p.Add(-t.cfg.MaxPollGap)
		if k > 0 && t.polls[k-1].After(lo) {
			lo = t.polls[k-1]
		}
		hi := p
		if lo.Before(start) {
			lo = start
		}
		if hi.After(end) {
			hi = end
		}
		if !hi.After(lo) {
			break
		}
		if n := len(spans); n > 0 && !spans[n-1][1].Before(lo) {
			spans[n-1][1] = hi
		} else {
			spans = append(spans, [2]time.Time{lo, hi})
		}
	}
	for _, sp := range spans {
		part := whole
		if !sp[0].Equal(start) || !sp[1].Equal(end) {
			if part, err = ocpi.SupplyFromStatus(events, sp[0], sp[1].Sub(sp[0]), 1); err != nil {
				return Bin{}
			}
		}
		covered += sp[1].Sub(sp[0])
		full += time.Duration(part[0].FullFraction * float64(sp[1].Sub(sp[0])))
	}
	b.Coverage = float64(covered) / float64(width)
	if covered == 0 || b.Coverage < t.cfg.MinCoverage {
		return b
	}
	b.Known = true
	b.Full = float64(full) / float64(covered)
	return b
}
