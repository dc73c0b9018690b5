// Package statusflow derives each station's pickups and returns per bin
// from consecutive status samples (GBFS station_status, and
// vehicle_status / free_bike_status where a system publishes it).
//
// # Method
//
// A Deriver keeps each station's last sample. Two consecutive samples
// make an interval; its bikes that left and arrived are, without vehicle
// ids, the net decrease or increase of the bikes docked (available plus
// disabled), and with ids on both samples the ids that vanished and
// appeared. The interval's counts go to the bin of the grid
// (Origin + k·Bin, Origin + (k+1)·Bin] that holds its later sample.
//
// The counts are lower bounds of the riders' flows, never estimates of
// them: a pickup and a return inside one interval cancel in the net
// change, so from counts every interval hides min(pickups, returns)
// pairs; with ids only a return whose very bike is picked up again in the
// same interval hides. Each Bin carries ExpectedHidden, the pairs expected
// to hide at the bin's own observed rates (E[min(P, R)] with P, R Poisson
// over each interval), and is flagged CensoredBelow when that exceeds
// HiddenFraction of its smaller flow: an observation of the flow censored
// from below, which is how a model should read it.
//
// Missing polls: an interval longer than MaxGap is a gap. Its change is
// placed in no bin (nothing says when in the gap it happened) and its time
// is not covered. A bin no interval covers is unobserved (Observed false:
// its zeros mean nothing); a bin partly covered has counts that are lower
// bounds of the whole bin's flows (CensoredBelow), since the gap's bikes
// are missing from them.
//
// Rebalancing trucks move many bikes at once. On each side (bikes
// leaving, bikes arriving) the detector groups consecutive intervals that
// each moved bikes that way into a run, which may span at most
// TruckWindow from its first sample (a single interval always forms a
// run). A run is a truck move when it moved TruckMin bikes or more and
// riders at the station's recent rate that way (an exponentially
// weighted count over the last hour or so of derived moves) would move
// as many in the run's time with probability below TruckAlpha (Poisson
// tail): a fixed threshold alone fires on riders at busy stations, where
// four bikes in five minutes is an ordinary rush. A truck move's bikes
// are excluded from the flows and counted in MovedOut or MovedIn, and its
// bin is CensoredBelow (riders inside the run are lost with it).
// A change while the station was closed that way at both samples
// (is_renting or is_returning false) is the operator's too, and counted
// likewise. A detector that fires on a burst of riders lowers the counts
// (they stay lower bounds); a truck it misses raises them above the
// riders' flows.
//
// A bin is emitted by Advance(until) once it ended max(MaxGap,
// TruckWindow) before until: every interval ending in it and every run
// touching it are then known. Samples are checked (station, time within
// the grid, counts within 0..stationstatus.MaxCount, vehicle ids unique
// and non-empty, time order per station, after the watermark); a refused
// sample is an error and counted by reason, never a panic.
//
// The measurement on the real Citi Bike counts is in
// docs/derived-flows.md.
package statusflow
