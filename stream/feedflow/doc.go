// Package feedflow turns a bike-share system's station status messages
// into the two flow models' input: each station's pickups and returns
// per bin, derived by package statusflow from consecutive samples, as
// observation messages on <prefix>.obs.<pickups> and
// <prefix>.obs.<returns>, and a watermark per bin so that a bin closes
// although some stations had no observation.
//
// The derived counts are lower bounds of the riders' flows (a pickup and
// a return between two polls cancel). A bin statusflow flags
// CensoredBelow (partly covered by polls, a truck run, or more hidden
// pairs expected than HiddenFraction of its smaller flow) is sent as an
// observation censored at its count (demand = supply = count, censored:
// the Tobit likelihood reads demand >= count), except a count of 0,
// which says nothing (demand >= 0) and which a diffusion likelihood
// would read as a station that turned all its demand away: it is not
// sent, like a bin no poll interval covered. Every other bin is sent as the count with
// unlimited supply; the daemon's [[rebalance]] step still censors it
// where the station ran empty or full.
//
// Flows keeps no goroutine and no connection: the daemon hands it each
// status message it stored and publishes what Take returns through the
// models' normal input path, so the derived flows are stored, replayed
// and snapshotted like any input.
package feedflow
