package rebalance

import (
	"sort"
	"time"
)

// Action is the move the risk suggests at one station and how urgent it
// is (see the package doc for the rule).
type Action struct {
	// Move is the bikes to add (> 0) or remove (< 0) to reach s*, s*
	// bounded by 0 and the capacity: at most the free docks added, at
	// most the bikes there removed.
	Move int
	// Urgency is the probability the move averts within the risk
	// horizon: P(empty) for an add, P(full) for a removal; 0 without a
	// move.
	Urgency float64
	// Due is the forecast bin (0: the one starting at the bin's end) at
	// whose start the averted probability first reaches the threshold;
	// -1 when it does not within the risk horizon (not urgent).
	Due int
}

// decide applies the rule to one station's risk: bikes now, usable
// capacity, s* (best), P(empty / full within h bins) for h = 1.., over
// the first bins forecast bins, against threshold.
func decide(bikes, capacity, best int, emptyWithin, fullWithin []float64, bins int, threshold float64) Action {
	target := min(max(best, 0), capacity)
	a := Action{Move: target - bikes, Due: -1}
	var p []float64
	switch {
	case a.Move > 0:
		p = emptyWithin
	case a.Move < 0:
		p = fullWithin
	default:
		return a
	}
	bins = min(bins, len(p))
	for h := range bins {
		if p[h] > a.Urgency {
			a.Urgency = p[h]
		}
		if a.Due < 0 && p[h] >= threshold {
			a.Due = h
		}
	}
	return a
}

// riskBins is the risk horizon in bins of width over a forecast of h
// bins: rounded up, at least one, at most h (0 when h is 0).
func riskBins(horizon, width time.Duration, h int) int {
	if h <= 0 {
		return 0
	}
	if width <= 0 {
		return h
	}
	n := int((horizon + width - 1) / width)
	return min(max(n, 1), h)
}

// act sets a station's move, urgency and by-when from its risk: the
// by-when is the start of the Due-th forecast bin after end.
func (r *Risker) act(sr *StationRisk, width time.Duration, bins int, binEnd time.Time) {
	a := decide(sr.Bikes, sr.Capacity, sr.Best, sr.EmptyWithin, sr.FullWithin, bins, r.cfg.UrgencyThreshold)
	sr.Move, sr.Urgency, sr.Urgent = a.Move, a.Urgency, a.Due >= 0
	if a.Due >= 0 {
		by := binEnd.Add(time.Duration(a.Due) * width)
		sr.By = &by
	}
}

// SortByUrgency orders stations for a dispatcher: those with a risk
// first; among them the urgent ones, earliest by-when first, then the
// higher urgency; then the others by urgency and score; stations
// without a risk last; ties by station id.
func SortByUrgency(list []StationRisk) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := &list[i], &list[j]
		if oa, ob := a.Status == StatusOK, b.Status == StatusOK; oa != ob {
			return oa
		}
		if a.Urgent != b.Urgent {
			return a.Urgent
		}
		if a.Urgent && a.By != nil && b.By != nil && !a.By.Equal(*b.By) {
			return a.By.Before(*b.By)
		}
		if a.Urgency != b.Urgency {
			return a.Urgency > b.Urgency
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.Station < b.Station
	})
}
