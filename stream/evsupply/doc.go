// Package evsupply turns the EVSE statuses `dcgpd ocpi` publishes into
// each charging site's supply and censoring per bin, for the daemon's
// [[charging]] entries.
//
// A Tracker keeps, per site (an OCPI location: the model's product) and
// EVSE, the recent status changes, and the times of the poller's
// successful polls. A poll marker at p says that every change up to p
// was published before it, so the polls cover the time between them: a
// poll at p covers (max(p', p − MaxPollGap), p] for the previous poll p'.
// For a bin [start, end) the tracker gives the site's supply (EVSEs
// available at the start plus those that became available in the bin),
// the part of the covered time it had no EVSE available, and whether
// the polls covered at least MinCoverage of the bin (else the bin's
// status is unknown and nothing is claimed).
//
// Censor applies that to a bin's observations, as the model expects
// them (package charging's converter writes the same): a site full for
// more than CensorFraction of the bin (default half) has its served count censored
// (supply lowered to it), or, if it served nobody, no observation and
// supply 0 (its demand was all turned away); a site with chargers to
// spare gets the status's supply; an unknown bin is left as sent.
package evsupply
