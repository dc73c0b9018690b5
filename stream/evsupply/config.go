package evsupply

import (
	"fmt"
	"math"
	"time"
)

// Config is one charging model's status handling. Start from
// DefaultConfig.
type Config struct {
	// Model names the model whose products are the sites; its statuses
	// come on <prefix>.evse.<model>.
	Model string
	// CensorFraction: a bin is censored when the site had no EVSE
	// available for more than this part of the covered time (0: at any
	// moment). A bin in which a site filled up is picked out by the
	// arrivals that filled it; censored at its served count it makes the
	// filter overestimate the demand of the full spell that follows
	// (docs/ev-charging.md), so only bins full for most of their length
	// are censored by default.
	CensorFraction float64
	// MinCoverage is the part of a bin the polls must cover for any
	// status to be claimed.
	MinCoverage float64
	// MaxPollGap is how far back a poll covers when the previous one is
	// older (the poller stopped or failed).
	MaxPollGap time.Duration
	// Retention is how long statuses and polls are kept (the newest one
	// before it is kept too); it must exceed the poller's refresh.
	Retention time.Duration
}

// DefaultConfig: censored when full for more than half the covered
// time, half the bin covered, polls covering at most 5 minutes back, 3
// hours kept.
func DefaultConfig() Config {
	return Config{CensorFraction: 0.5, MinCoverage: 0.5, MaxPollGap: 5 * time.Minute, Retention: 3 * time.Hour}
}

// Validate reports the first unusable setting.
func (c *Config) Validate() error {
	bad := func(key, format string, a ...any) error {
		return fmt.Errorf("charging %q: %s: %s", c.Model, key, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Model == "":
		return bad("model", "required")
	case !(c.CensorFraction >= 0 && c.CensorFraction < 1):
		return bad("censor_fraction", "must be in [0, 1), got %v", c.CensorFraction)
	case !(c.MinCoverage > 0 && c.MinCoverage <= 1) || math.IsNaN(c.MinCoverage):
		return bad("min_coverage", "must be in (0, 1], got %v", c.MinCoverage)
	case c.MaxPollGap <= 0:
		return bad("max_poll_gap", "must be > 0, got %v", c.MaxPollGap)
	case c.Retention < c.MaxPollGap:
		return bad("retention", "%v is shorter than max_poll_gap %v", c.Retention, c.MaxPollGap)
	}
	return nil
}
