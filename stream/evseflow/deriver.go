package evseflow

import (
	"errors"
	"fmt"
	"time"

	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// Refusal reasons (Stats.Refused keys, EventError.Reason).
const (
	ReasonOutOfOrder = "out_of_order" // a poll not after the last one
	ReasonBadTime    = "bad_time"     // a poll before the grid's origin
	ReasonNoEVSE     = "no_evse"      // a status without an EVSE uid
	ReasonStatus     = "bad_status"   // not an OCPI 2.2.1 status
)

// EventError is a refused poll or status.
type EventError struct{ Reason, Detail string }

func (e *EventError) Error() string { return "evseflow: " + e.Reason + ": " + e.Detail }

// Stats count what a Deriver took in.
type Stats struct {
	Polls   int            // accepted polls
	Gaps    int            // intervals longer than MaxGap
	Ignored int            // statuses of sites the Deriver does not track
	Untimed int            // transitions placed at the poll's time (last_updated outside the interval)
	Refused map[string]int // by reason
}

// maxEmit bounds the bins one Advance emits per site (the rest follow at
// the next call).
const maxEmit = 1 << 16

type evse struct {
	status  ocpi.Status
	updated time.Time
}

type site struct {
	name  string
	evses map[string]evse
	bins  map[int64]*acc
}

// Deriver turns polls of EVSE status into sessions per site and bin. It
// is not safe for concurrent use.
type Deriver struct {
	cfg   Config
	sites []*site
	index map[string]*site
	last  time.Time // the last accepted poll
	next  int64     // the first bin not yet emitted
	stats Stats
}

// New tracks the given sites (OCPI location ids: the model's products),
// in that order; statuses of other sites are ignored (counted).
func New(cfg Config, sites []string) (*Deriver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Deriver{cfg: cfg, index: make(map[string]*site, len(sites)), stats: Stats{Refused: map[string]int{}}}
	for _, name := range sites {
		if _, dup := d.index[name]; dup {
			return nil, fmt.Errorf("evseflow: site %q given twice", name)
		}
		s := &site{name: name, evses: map[string]evse{}, bins: map[int64]*acc{}}
		d.sites = append(d.sites, s)
		d.index[name] = s
	}
	return d, nil
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

func (d *Deriver) refuse(reason, format string, a ...any) *EventError {
	d.stats.Refused[reason]++
	return &EventError{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// Poll takes the statuses read by a poll at at (its start; every change
// up to at is in them or was in an earlier poll). A poll not after the
// last one is refused whole; a bad status alone is refused, the others
// taken. The error joins every refusal (nil when none).
func (d *Deriver) Poll(at time.Time, statuses []ocpi.StatusEvent) error {
	if !d.last.IsZero() && !at.After(d.last) {
		return d.refuse(ReasonOutOfOrder, "poll at %s is not after the last one at %s", at.Format(time.RFC3339Nano), d.last.Format(time.RFC3339Nano))
	}
	if at.Before(d.cfg.Origin) {
		return d.refuse(ReasonBadTime, "poll at %s is before the grid's origin %s", at.Format(time.RFC3339), d.cfg.Origin.Format(time.RFC3339))
	}
	var errs []error
	bySite := map[*site][]ocpi.StatusEvent{}
	for _, e := range statuses {
		s, ok := d.index[e.Site]
		switch {
		case !ok:
			d.stats.Ignored++
		case e.EVSE == "":
			errs = append(errs, d.refuse(ReasonNoEVSE, "site %q: a status without an EVSE uid", e.Site))
		case !e.Status.Valid():
			errs = append(errs, d.refuse(ReasonStatus, "site %q EVSE %q: status %q", e.Site, e.EVSE, e.Status))
		default:
			bySite[s] = append(bySite[s], e)
		}
	}
	prev := d.last
	gap := !prev.IsZero() && at.Sub(prev) > d.cfg.MaxGap
	if gap {
		d.stats.Gaps++
	}
	if d.last.IsZero() {
		d.next = d.cfg.bin(at)
	}
	for _, s := range d.sites {
		counted := !prev.IsZero() && !gap && s.observable(bySite[s])
		if counted {
			s.cover(&d.cfg, later(prev, d.cfg.binStart(d.next)), at)
		}
		for _, e := range bySite[s] {
			d.apply(s, e, prev, at, counted)
		}
	}
	d.last = at
	d.stats.Polls++
	return errors.Join(errs...)
}

// observable reports whether the site's interval ending with this poll
// can be read: some EVSE's state was known before it and none is
// UNKNOWN (offline) at either end.
func (s *site) observable(changes []ocpi.StatusEvent) bool {
	if len(s.evses) == 0 {
		return false
	}
	after := map[string]ocpi.Status{}
	for _, e := range changes {
		after[e.EVSE] = e.Status
	}
	for id, x := range s.evses {
		if x.status == ocpi.StatusUnknown {
			return false
		}
		if st, ok := after[id]; ok && st == ocpi.StatusUnknown {
			return false
		}
	}
	for id, st := range after {
		if _, ok := s.evses[id]; !ok && st == ocpi.StatusUnknown {
			return false
		}
	}
	return true
}

// cover adds the interval (prev, at] to the site's bins' covered time.
func (s *site) cover(cfg *Config, prev, at time.Time) {
	for k := cfg.bin(prev); ; k++ {
		lo, hi := cfg.binStart(k), cfg.binStart(k+1)
		lo, hi = later(lo, prev), earlier(hi, at)
		if hi.After(lo) {
			s.acc(k).covered += hi.Sub(lo)
		}
		if !cfg.binStart(k + 1).Before(at) {
			return
		}
	}
}

func (s *site) acc(k int64) *acc {
	a := s.bins[k]
	if a == nil {
		a = &acc{}
		s.bins[k] = a
	}
	return a
}

func occupied(st ocpi.Status) bool { return st == ocpi.StatusCharging || st == ocpi.StatusBlocked }

// apply records one EVSE's status read at at and, where the interval is
// counted, its transition since the poll at prev.
func (d *Deriver) apply(s *site, e ocpi.StatusEvent, prev, at time.Time, counted bool) {
	old, seen := s.evses[e.EVSE]
	s.evses[e.EVSE] = evse{status: e.Status, updated: e.At}
	if !seen || !counted || old.status == e.Status && old.updated.Equal(e.At) {
		return
	}
	// The bin of the change's time, in (prev, at]; one at the poll's own
	// instant on a bin boundary goes to the bin the interval covers.
	k, last := d.cfg.bin(e.At), d.cfg.bin(at.Add(-time.Nanosecond))
	if !e.At.After(prev) || e.At.After(at) {
		d.stats.Untimed++
		k = last
	}
	k = min(k, last)
	if k < d.next {
		return // a bin already emitted as a gap (Advance ran ahead of the polls)
	}
	was, is := occupied(old.status), occupied(e.Status)
	switch {
	case !was && is:
		s.acc(k).started++
	case was && !is:
		s.acc(k).ended++
	case old.status == e.Status && !old.updated.Equal(e.At):
		// The same status with a newer last_updated: something happened
		// in between, perhaps a session.
		s.acc(k).possible++
	}
}

// Advance emits, in bin order and then the sites' order, every bin not
// yet emitted that ended at or before the last poll, or MaxGap or more
// before until (on the polls' clock: the polls stopped, so it is a gap).
func (d *Deriver) Advance(until time.Time) []Bin {
	if d.last.IsZero() {
		return nil
	}
	limit := d.cfg.bin(d.last) // the bins before it ended at or before the last poll
	if k := d.cfg.bin(until.Add(-d.cfg.MaxGap)); k > limit {
		limit = k
	}
	limit = min(limit, d.next+maxEmit)
	var out []Bin
	for k := d.next; k < limit; k++ {
		for _, s := range d.sites {
			out = append(out, s.bins[k].bin(&d.cfg, s.name, k))
			delete(s.bins, k)
		}
	}
	if limit > d.next {
		d.next = limit
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
