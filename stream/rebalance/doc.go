// Package rebalance joins a bike-share system's two flows for the daemon:
// a pickups model and a returns model over the same stations, fed by the
// system's station status messages (package stationstatus).
//
// A Tracker keeps each station's recent status samples. From them it
// derives, per station and bin, the part of the bin the station could not
// serve pickups (empty, not renting or not installed) and returns (full,
// not returning or not installed); Censor applies that to a bin's
// observations of either model before the online step: a bin whose
// blocked part reaches Config.CensorFraction becomes censored at its
// observed count. A sample's state holds until the next sample, at most
// Config.MaxHold; a sample whose station had not reported for
// Config.MaxReportAge is no evidence. A bin whose samples cover less
// than Config.MinCoverage of it claims nothing (counted as unknown):
// censoring is only ever added on evidence, never removed.
//
// A Risker turns both models' forecasts for a bin (means and variances
// over the next H bins) and each station's inventory as of the bin's end
// into the station's risk (package inventory): P(empty) and P(full)
// within each horizon, expected unmet pickups and returns, UDF(s) for
// s = 0..C, s* and the value of one bike more or less. A station without
// usable status or forecasts gets a status saying why instead of a risk.
// The Risk messages are the daemon's output on <prefix>.risk.<name>.
//
// Each station's risk also gives the move a dispatcher makes (decide):
// Move = s* − bikes now, s* bounded by 0 and the usable capacity (so at
// most the free docks are added and at most the bikes there removed).
// The risk horizon is Config.RiskHorizon in whole bins (rounded up, at
// least one, at most the forecast horizon). An add averts running empty
// and a removal running full: Urgency is the largest P(empty within h)
// (for an add) or P(full within h) (for a removal) over h up to the
// risk horizon, 0 without a move. The move is Urgent when Urgency
// reaches Config.UrgencyThreshold, and By is then the start of the
// first forecast bin h at which that probability reaches the threshold
// (the bin's end for h = 1: now); By is absent when it does not within
// the risk horizon. SortByUrgency orders the stations for a dispatcher:
// urgent first, earliest By first. A station's Name comes from its
// status samples (the newest that carried one).
//
// The package knows nothing of NATS or HTTP: the daemon feeds it
// messages and publishes what it returns.
package rebalance
