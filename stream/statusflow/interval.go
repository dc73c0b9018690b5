package statusflow

import (
	"slices"
	"time"
)

// Sides of an interval: bikes leaving (pickups) and arriving (returns).
const (
	out = 0
	in  = 1
)

// interval is the change between two consecutive samples of a station.
type interval struct {
	t0, t1 time.Time
	// n are the bikes that left and arrived: from ids, or the net change
	// split by sign.
	n [2]int
	// closed: the station was closed for that side at both ends, so the
	// change is the operator's.
	closed [2]bool
	// done and truck: the truck detector's decision, per side.
	done, truck [2]bool
	byID        bool
	bikes0      int
}

// newInterval is the change from a to b (b later).
func newInterval(a, b *Sample) *interval {
	iv := &interval{t0: a.At, t1: b.At, bikes0: a.Bikes}
	if a.HasVehicles && b.HasVehicles {
		iv.byID = true
		iv.n[out], iv.n[in] = setDiff(a.Vehicles, b.Vehicles)
	} else if d := b.Bikes - a.Bikes; d < 0 {
		iv.n[out] = -d
	} else {
		iv.n[in] = d
	}
	iv.closed[out] = !a.Renting && !b.Renting
	iv.closed[in] = !a.Returning && !b.Returning
	return iv
}

// setDiff counts the ids of sorted a missing from sorted b (left) and
// those of b missing from a (arrived).
func setDiff(a, b []string) (left, arrived int) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			i++
			j++
		case a[i] < b[j]:
			left++
			i++
		default:
			arrived++
			j++
		}
	}
	return left + len(a) - i, arrived + len(b) - j
}

// sortedIDs returns a sorted copy of ids in buf's storage.
func sortedIDs(buf, ids []string) []string {
	buf = append(buf[:0], ids...)
	slices.Sort(buf)
	return buf
}

// run is an open truck candidate on one side: consecutive intervals that
// each moved bikes that way. rate is the station's recent rate that way
// (bikes an hour) when the run began.
type run struct {
	start   time.Time
	members []*interval
	sum     int
	rate    float64
}

// closeRun decides r's members on side: a truck move when detection is
// on, the run moved at least TruckMin bikes, and riders at the run's
// rate would move that many in the run's time with probability below
// TruckAlpha. It reports a truck.
func closeRun(cfg *Config, r *run, side int) bool {
	truck := false
	if n := len(r.members); cfg.DetectTrucks && r.sum >= cfg.TruckMin {
		mu := r.rate * r.members[n-1].t1.Sub(r.start).Hours()
		truck = poissonTail(mu, r.sum) < cfg.TruckAlpha
	}
	for _, iv := range r.members {
		iv.done[side], iv.truck[side] = true, truck
	}
	r.members, r.sum = r.members[:0], 0
	return truck
}

// feed adds iv to side's run, closing the run first when iv cannot
// extend it; rate is the station's recent rate that way. An interval
// that moved nothing that way, or whose move was the operator's, closes
// the run and is decided at once. It reports whether a truck run was
// closed.
func feed(cfg *Config, r *run, iv *interval, side int, rate float64) bool {
	if iv.n[side] == 0 || iv.closed[side] {
		truck := closeRun(cfg, r, side)
		iv.done[side] = true
		return truck
	}
	truck := false
	if len(r.members) > 0 && iv.t1.Sub(r.start) > cfg.TruckWindow {
		truck = closeRun(cfg, r, side)
	}
	if len(r.members) == 0 {
		r.start, r.rate = iv.t0, rate
	}
	r.members = append(r.members, iv)
	r.sum += iv.n[side]
	return truck
}
