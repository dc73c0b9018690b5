package gbfs

import "time"

// episode follows a condition that lasts across polls (a failing feed, a
// clock ahead) so that it is logged when it starts, at most once per
// interval while it lasts, and when it ends; every occurrence is counted
// by the caller's metrics whether logged or not.
type episode struct {
	active        bool
	since, logged time.Time
	count         int // occurrences since it started
}

// occur records one occurrence at now and reports whether to log it: the
// first of the episode, or the first an interval after the last logged.
func (e *episode) occur(now time.Time, interval time.Duration) bool {
	if !e.active {
		*e = episode{active: true, since: now, logged: now, count: 1}
		return true
	}
	e.count++
	if now.Sub(e.logged) >= interval {
		e.logged = now
		return true
	}
	return false
}

// end closes the episode; ended reports whether one was open, count and
// since say how many occurrences it had and when it started.
func (e *episode) end() (ended bool, count int, since time.Time) {
	if !e.active {
		return false, 0, time.Time{}
	}
	ended, count, since = true, e.count, e.since
	*e = episode{}
	return ended, count, since
}
