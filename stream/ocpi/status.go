package ocpi

import (
	"fmt"
	"sort"
	"time"
)

// Status is an EVSE's status as OCPI 2.2.1 publishes it in a location's
// evses[].status.
type Status string

// The OCPI 2.2.1 EVSE statuses.
const (
	StatusAvailable   Status = "AVAILABLE"   // free to charge
	StatusCharging    Status = "CHARGING"    // in use
	StatusBlocked     Status = "BLOCKED"     // a car blocks it without charging
	StatusReserved    Status = "RESERVED"    // held for a driver
	StatusOutOfOrder  Status = "OUTOFORDER"  // broken
	StatusInoperative Status = "INOPERATIVE" // switched off
	StatusPlanned     Status = "PLANNED"     // not yet installed
	StatusRemoved     Status = "REMOVED"     // gone
	StatusUnknown     Status = "UNKNOWN"     // offline: no status known
)

// Valid reports whether s is one of the OCPI statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusAvailable, StatusCharging, StatusBlocked, StatusReserved, StatusOutOfOrder,
		StatusInoperative, StatusPlanned, StatusRemoved, StatusUnknown:
		return true
	}
	return false
}

// StatusEvent says that EVSE of Site has Status from At on.
type StatusEvent struct {
	Site, EVSE string
	Status     Status
	At         time.Time
}

// BinSupply is a site's supply in one bin from its EVSEs' statuses.
type BinSupply struct {
	// Supply is the number of arrivals the site could serve: EVSEs
	// available at the bin's start plus those that became available
	// during it.
	Supply int
	// FullFraction is the part of the bin with no EVSE available;
	// Available the mean number available.
	FullFraction, Available float64
	// Known is false while no status of the site had been seen.
	Known bool
}

// Censored reports whether the site had no EVSE available at some moment
// of the bin: arrivals then were turned away, so the sessions started are
// a lower bound of the demand.
func (b BinSupply) Censored() bool { return b.Known && b.FullFraction > 0 }

// SupplyFromStatus turns one site's status events into its supply in nbins
// bins of width from origin. An EVSE counts as available while its last
// status is AVAILABLE; every other status (busy, broken, unknown) makes
// it unavailable. Events are applied in time order; those before origin
// set the state at the start. An event with an invalid status is an
// error naming it.
func SupplyFromStatus(events []StatusEvent, origin time.Time, width time.Duration, nbins int) ([]BinSupply, error) {
	if width <= 0 || nbins < 1 {
		return nil, fmt.Errorf("ocpi: %d bins of %v", nbins, width)
	}
	ev := append([]StatusEvent(nil), events...)
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].At.Before(ev[j].At) })
	for _, e := range ev {
		if !e.Status.Valid() {
			return nil, fmt.Errorf("ocpi: EVSE %q of %q: unknown status %q", e.EVSE, e.Site, e.Status)
		}
	}
	state := map[string]bool{} // EVSE → available
	avail, next := 0, 0
	apply := func(e StatusEvent) (becameAvailable bool) {
		was, seen := state[e.EVSE]
		now := e.Status == StatusAvailable
		state[e.EVSE] = now
		switch {
		case now && (!seen || !was):
			avail++
			return true
		case !now && seen && was:
			avail--
		}
		return false
	}
	out := make([]BinSupply, nbins)
	for b := range out {
		bs := origin.Add(time.Duration(b) * width)
		be := bs.Add(width)
		for next < len(ev) && !ev[next].At.After(bs) {
			apply(ev[next])
			next++
		}
		o := &out[b]
		o.Known = len(state) > 0
		o.Supply = avail
		var full, area time.Duration
		cur := bs
		for next < len(ev) && ev[next].At.Before(be) {
			dt := ev[next].At.Sub(cur)
			area += time.Duration(avail) * dt
			if avail == 0 && len(state) > 0 {
				full += dt
			}
			if apply(ev[next]) {
				o.Supply++
			}
			cur = ev[next].At
			next++
			o.Known = true
		}
		dt := be.Sub(cur)
		area += time.Duration(avail) * dt
		if avail == 0 && len(state) > 0 {
			full += dt
		}
		o.FullFraction = float64(full) / float64(width)
		o.Available = float64(area) / float64(width)
	}
	return out, nil
}
