package charging

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Cell is one site in one bin.
type Cell struct {
	// Arrivals is the site's own demand: drivers who came to it (the
	// truth). Served counts the sessions that started at it (its own and
	// diverted drivers): the observed demand.
	Arrivals, Served int
	// Supply is the number of arrivals the site could serve in the bin
	// (free chargers at its start plus chargers freed during it), or
	// Served when Censored.
	Supply int
	// Censored: the site had no free charger at some moment of the bin.
	Censored bool
	// FullFraction is the part of the bin with no free charger;
	// Occupancy the mean number of busy chargers.
	FullFraction, Occupancy float64
	// TurnedAway counts the site's own arrivals that found it full;
	// DivertedTo[j] how many of them charged at site j, Lost how many
	// charged nowhere (gave up, or found j full too).
	TurnedAway, Lost int
	DivertedTo       []int
	// free is the supply the site had (chargers free at the bin's start
	// plus those freed in it), censored or not.
	free int
}

// Table is an outcome per site and bin: Cells[b][s] is site s in the bin
// starting at Origin + b·Width.
type Table struct {
	Sites  []Site
	Origin time.Time
	Width  time.Duration
	Cells  [][]Cell
}

// BinStart returns the start of bin b.
func (t *Table) BinStart(b int) time.Time { return t.Origin.Add(time.Duration(b) * t.Width) }

// Bins aggregates an outcome over nbins bins of width from origin.
// Arrivals outside the span are left out of the counts; sessions that
// began before it still occupy their chargers in it.
func (o *Outcome) Bins(origin time.Time, width time.Duration, nbins int) (*Table, error) {
	if width <= 0 {
		return nil, errors.New("charging: bin width must be positive")
	}
	if nbins < 1 {
		return nil, fmt.Errorf("charging: %d bins, want at least 1", nbins)
	}
	ns := len(o.Network.Sites)
	t := &Table{Sites: o.Network.Sites, Origin: origin, Width: width, Cells: make([][]Cell, nbins)}
	for b := range t.Cells {
		t.Cells[b] = make([]Cell, ns)
		for s := range t.Cells[b] {
			t.Cells[b][s].DivertedTo = make([]int, ns)
		}
	}
	bin := func(at time.Time) int {
		d := at.Sub(origin)
		if d < 0 {
			return -1
		}
		if b := int(d / width); b < nbins {
			return b
		}
		return -1
	}
	served := make([][]interval, ns)
	for _, a := range o.Arrivals {
		if a.ServedAt >= 0 {
			served[a.ServedAt] = append(served[a.ServedAt], interval{a.Time, a.Time.Add(a.Duration)})
		}
		b := bin(a.Time)
		if b < 0 {
			continue
		}
		c := &t.Cells[b][a.Site]
		c.Arrivals++
		if a.ServedAt >= 0 {
			t.Cells[b][a.ServedAt].Served++
		}
		if a.TurnedAway() {
			c.TurnedAway++
			if a.ServedAt >= 0 {
				c.DivertedTo[a.ServedAt]++
			} else {
				c.Lost++
			}
		}
	}
	for s := range served {
		t.sweep(s, served[s])
	}
	return t, nil
}

type interval struct{ start, end time.Time }

// sweep fills site s's supply, censoring, full fraction and occupancy
// from its served sessions.
func (t *Table) sweep(s int, iv []interval) {
	type event struct {
		at time.Time
		d  int
	}
	ev := make([]event, 0, 2*len(iv))
	for _, x := range iv {
		ev = append(ev, event{x.start, +1}, event{x.end, -1})
	}
	// Ends before starts at the same instant: a charger freed at t can
	// be taken at t.
	sort.Slice(ev, func(i, j int) bool {
		if ev[i].at.Equal(ev[j].at) {
			return ev[i].d < ev[j].d
		}
		return ev[i].at.Before(ev[j].at)
	})
	pool := t.Sites[s].Pool
	busy, next := 0, 0
	for b := range t.Cells {
		bs := t.BinStart(b)
		be := bs.Add(t.Width)
		// Chargers carried into the bin: busy just before bs, less those
		// ending exactly at bs.
		for next < len(ev) && ev[next].at.Before(bs) {
			busy += ev[next].d
			next++
		}
		carried := busy
		for i := next; i < len(ev) && ev[i].at.Equal(bs) && ev[i].d < 0; i++ {
			carried--
		}
		released := 0
		var full, occ time.Duration
		cur := bs
		for next < len(ev) && ev[next].at.Before(be) {
			e := ev[next]
			dt := e.at.Sub(cur)
			occ += time.Duration(busy) * dt
			if busy >= pool {
				full += dt
			}
			busy += e.d
			if e.d < 0 && e.at.After(bs) {
				released++
			}
			cur = e.at
			next++
		}
		dt := be.Sub(cur)
		occ += time.Duration(busy) * dt
		if busy >= pool {
			full += dt
		}
		c := &t.Cells[b][s]
		c.FullFraction = float64(full) / float64(t.Width)
		c.Occupancy = float64(occ) / float64(t.Width)
		c.Censored = full > 0 || c.TurnedAway > 0
		c.Supply = pool - carried + released
		c.free = c.Supply
		if c.Censored {
			c.Supply = c.Served
		}
	}
}

// CensorAbove keeps censored only the cells in which the site was full
// for more than fraction of the bin; the others become uncensored, with
// the supply the site had (Bins censors at any full moment, fraction 0).
// A bin in which the site filled up is picked out by the arrivals that
// filled it: censored at its served count, it tells a Gaussian-noise
// model that the demand was high just before the full spell, and the
// filter carries that into the spell's unobserved bins (see
// docs/ev-charging.md).
func (t *Table) CensorAbove(fraction float64) {
	for b := range t.Cells {
		for s := range t.Cells[b] {
			if c := &t.Cells[b][s]; c.Censored && c.FullFraction <= fraction {
				c.Censored, c.Supply = false, max(c.free, c.Served)
			}
		}
	}
}
