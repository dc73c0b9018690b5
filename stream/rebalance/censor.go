package rebalance

import (
	"math"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
)

// Flow is which of the two models a bin belongs to.
type Flow int

// The two flows.
const (
	Pickups Flow = iota
	Returns
)

func (f Flow) String() string {
	if f == Pickups {
		return "pickups"
	}
	return "returns"
}

// CensorResult counts what Censor did to a bin's observations.
type CensorResult struct {
	// Censored: observations the status made censored; Uncensored:
	// observed, known and below CensorFraction (left as sent); Unknown:
	// observed, but the samples covered too little of the bin.
	Censored, Uncensored, Unknown int
}

// Censor applies the status to one bin of a flow's observations (obs[i]
// is station names[i]): an observed count whose station was blocked for
// at least CensorFraction of the bin becomes censored at that count (its
// supply lowered to it). Censoring the sender gave is kept; nothing is
// uncensored.
func (t *Tracker) Censor(flow Flow, names []string, obs []cvi.Obs, start, end time.Time) CensorResult {
	var res CensorResult
	for i := range obs {
		o := &obs[i]
		if math.IsNaN(o.Y) {
			continue
		}
		b := t.Blocked(names[i], start, end)
		frac := b.Pickups
		if flow == Returns {
			frac = b.Returns
		}
		switch {
		case !b.Known:
			res.Unknown++
		case frac >= t.cfg.CensorFraction:
			res.Censored++
			o.Censored = true
			if !(o.Supply <= o.Y) {
				o.Supply = o.Y
			}
		default:
			res.Uncensored++
		}
	}
	return res
}
