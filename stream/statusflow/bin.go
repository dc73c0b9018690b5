package statusflow

import "time"

// Bin is one station's flows in one bin of the grid, (Start, End].
//
// Pickups and Returns are lower bounds of the bikes taken and returned by
// riders: each poll interval contributes its net decrease (increase) of
// the bike count, or with vehicle ids the bikes that left (arrived), so a
// pickup and a return inside one interval cancel (with ids: only when the
// returned bike itself is picked up). Moves detected as trucks, and
// changes while the station was closed for that direction, are excluded
// and counted in MovedOut and MovedIn. An interval's change is counted in
// the bin holding its later sample.
type Bin struct {
	Station    string
	Start, End time.Time
	Pickups    int
	Returns    int
	MovedOut   int
	MovedIn    int
	// Coverage is the share of the bin spanned by intervals no longer
	// than MaxGap; Observed is Coverage > 0. An unobserved bin's counts
	// are 0 and mean nothing; a partly covered bin's are lower bounds of
	// the whole bin.
	Coverage float64
	Observed bool
	// ExpectedHidden is the expected number of pickup–return pairs that
	// cancelled inside poll intervals, at the bin's own observed rates (a
	// low estimate, since those rates are lower bounds).
	ExpectedHidden float64
	// CensoredBelow says the counts are materially below the flows: the
	// bin is partly covered, a truck run touched it (riders' moves inside
	// the run are lost), or ExpectedHidden exceeds HiddenFraction of the
	// smaller flow.
	CensoredBelow bool
	// TruckRun says a detected truck move ended in the bin.
	TruckRun bool
	// Closed says the station was not renting or not returning at some
	// sample of the bin: the flows were cut by the operator (demand there
	// is censored, a matter for the model, not for these counts).
	Closed bool
	// FromVehicles says every interval counted in the bin was counted by
	// vehicle id.
	FromVehicles bool
}

// acc accumulates one bin of one station.
type acc struct {
	pickups, returns, movedOut, movedIn int
	covered                             time.Duration
	items                               []hiddenItem
	counted, byID                       int
	truck, closed                       bool
}

// bin finishes a's bin k of station st.
func (a *acc) bin(cfg *Config, st string, k int64) Bin {
	start := cfg.Origin.Add(time.Duration(k) * cfg.Bin)
	b := Bin{Station: st, Start: start, End: start.Add(cfg.Bin), Pickups: a.pickups, Returns: a.returns,
		MovedOut: a.movedOut, MovedIn: a.movedIn, TruckRun: a.truck, Closed: a.closed,
		FromVehicles: a.counted > 0 && a.byID == a.counted}
	b.Coverage = min(1, float64(a.covered)/float64(cfg.Bin))
	b.Observed = a.covered > 0
	b.ExpectedHidden = expectedHidden(a.pickups, a.returns, a.covered.Hours(), a.items)
	small := float64(max(1, min(a.pickups, a.returns)))
	b.CensoredBelow = b.Observed && (a.covered < cfg.Bin || a.truck || b.ExpectedHidden > cfg.HiddenFraction*small)
	return b
}
