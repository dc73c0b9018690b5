// Package evseflow derives each charging site's sessions started and
// ended per bin from the OCPI EVSE statuses a poller reads, for an
// operator who publishes charger status but no session records.
//
// # Method
//
// A Deriver keeps each EVSE's last status and last_updated. Each poll
// gives the statuses it read (those that changed since the last poll
// suffice: an EVSE not listed keeps its state). An EVSE is occupied
// while CHARGING or BLOCKED (a car on it, charging or not). Between two
// consecutive polls an EVSE that went from not occupied to occupied
// started a session, and one that went the other way ended one. The
// session is placed in the bin [Origin + k·Bin, Origin + (k+1)·Bin)
// holding its last_updated when that lies inside the interval between
// the polls (OCPI's last_updated is the time of the change); otherwise
// (a feed whose last_updated is missing, stale or ahead of the poll) in
// the bin holding the later poll's time, counted in Stats.Untimed.
//
// # What the counts are
//
// The counts are lower bounds of the sessions, not estimates of them:
// only the net change of each EVSE between two polls is seen, so a
// session that starts and ends between two polls, or a car that leaves
// an EVSE and another that takes it between two polls, leave no
// transition. Such an EVSE usually shows a newer last_updated with the
// same status (or the same occupied state): each is counted in the
// bin's Possible, an upper bound of the sessions hidden that way when at
// most one hides per EVSE and interval, and the bin is CensoredBelow.
// A status change that is not a transition (CHARGING to BLOCKED: the car
// stopped charging; AVAILABLE to RESERVED) starts and ends nothing.
//
// Gaps: an interval between polls longer than MaxGap (the poller failed
// or stopped) is a gap. Its transitions are placed in no bin (a session
// that started and ended in it is invisible, and its last transition
// alone would say nothing of how many happened) and its time is not
// covered. An EVSE whose status is UNKNOWN (offline) at either poll makes
// the interval a gap for its site, and a transition from or to UNKNOWN
// is not counted. A bin no interval covers is unobserved (Observed
// false: its zeros mean nothing); a bin partly covered has counts that
// are lower bounds of the whole bin's (CensoredBelow).
//
// A bin is emitted by Advance(until) once a poll at or after its end has
// been read (every change before its end is then known), or once it
// ended MaxGap before until (the polls stopped: it is a gap). Polls out
// of time order and statuses that are not OCPI's are refused with an
// error naming them and counted by reason; the rest of the poll is
// taken; nothing panics.
//
// The measurement against the sessions of examples/ev-5min is in
// docs/ev-charging.md ("Sessions from status").
package evseflow
