package evseflow

import "time"

// Bin is one site's sessions in one bin.
type Bin struct {
	Site       string
	Start, End time.Time
	// Started and Ended count the transitions seen: lower bounds of the
	// sessions started and ended.
	Started, Ended int
	// Possible counts the EVSEs whose last_updated moved between two
	// polls with no transition seen: each may hide a session.
	Possible int
	// Coverage is the part of the bin covered by intervals between polls
	// no longer than MaxGap with no EVSE of the site offline.
	Coverage float64
	// Observed: some of the bin was covered (else its zeros mean
	// nothing).
	Observed bool
	// CensoredBelow: the counts are lower bounds of the bin's sessions
	// that may be short (part of the bin uncovered, or Possible > 0).
	CensoredBelow bool
}

// acc accumulates one site's bin until it is emitted.
type acc struct {
	started, ended, possible int
	covered                  time.Duration
}

func (a *acc) bin(cfg *Config, site string, k int64) Bin {
	b := Bin{Site: site, Start: cfg.binStart(k), End: cfg.binStart(k + 1)}
	if a == nil {
		return b
	}
	b.Started, b.Ended, b.Possible = a.started, a.ended, a.possible
	b.Coverage = min(float64(a.covered)/float64(cfg.Bin), 1)
	b.Observed = a.covered > 0
	b.CensoredBelow = b.Observed && (b.Coverage < 1 || b.Possible > 0)
	return b
}
