package rebalance

import (
	"fmt"
	"math"
	"time"

	"github.com/dcgpd/dcgpd/inventory"
)

// Config is one rebalanced system: two models over the same stations and
// the status feed that gives their inventory. Start from DefaultConfig.
type Config struct {
	// Name names the system: the status subject's and the risk
	// subject's last token, the risk bucket's key prefix.
	Name string
	// Pickups and Returns name the two models.
	Pickups, Returns string
	// PlanningBins is the UDF's horizon in bins (0: every forecast bin).
	PlanningBins int
	// PickupWeight and ReturnWeight weigh an unmet pickup and return.
	PickupWeight, ReturnWeight float64
	// CensorFraction is the part of a bin a station must be blocked for
	// its observation in that bin to be censored.
	CensorFraction float64
	// MinCoverage is the part of a bin fresh samples must cover for any
	// censoring to be claimed.
	MinCoverage float64
	// MaxHold is how long a sample's state is taken to last without a
	// newer sample.
	MaxHold time.Duration
	// MaxReportAge: a sample whose station had not reported for longer
	// (at the snapshot's time) is no evidence.
	MaxReportAge time.Duration
	// MaxStatusAge: a station whose newest usable sample is older than
	// this at a bin's end gets status stale_status instead of a risk.
	MaxStatusAge time.Duration
	// RiskHorizon is the horizon of the stated P(empty) and P(full), of
	// a move's urgency and of its by-when, taken in whole bins (rounded
	// up, at least one, at most the forecast horizon).
	RiskHorizon time.Duration
	// UrgencyThreshold: a move is urgent when the probability it averts
	// (P(empty) for an add, P(full) for a removal) reaches it within
	// RiskHorizon.
	UrgencyThreshold float64
	// Retention is how long samples are kept (at least a bin, its
	// lateness and MaxHold).
	Retention time.Duration
	// Inventory configures the chain and its quadrature.
	Inventory inventory.Config
	// Workers is the number of goroutines that share a bin's stations,
	// each with its own inventory.Planner (0: GOMAXPROCS when the job
	// is built). The records do not depend on it.
	Workers int
}

// DefaultConfig is the configuration a [[rebalance]] entry starts from.
func DefaultConfig() Config {
	return Config{
		PickupWeight: 1, ReturnWeight: 1,
		CensorFraction: 0.1, MinCoverage: 0.5,
		MaxHold: 15 * time.Minute, MaxReportAge: time.Hour, MaxStatusAge: 30 * time.Minute,
		RiskHorizon: 3 * time.Hour, UrgencyThreshold: 0.5,
		Retention: 6 * time.Hour,
		Inventory: inventory.DefaultConfig(),
	}
}

// Validate reports the first unusable setting.
func (c *Config) Validate() error {
	bad := func(key, format string, a ...any) error {
		return fmt.Errorf("rebalance %q: %s: %s", c.Name, key, fmt.Sprintf(format, a...))
	}
	frac := func(v float64) bool { return v >= 0 && v <= 1 && !math.IsNaN(v) }
	switch {
	case c.Name == "":
		return bad("name", "required")
	case c.Pickups == "" || c.Returns == "" || c.Pickups == c.Returns:
		return bad("pickups, returns", "two different model names required, got %q and %q", c.Pickups, c.Returns)
	case c.Workers < 0:
		return bad("workers", "must be >= 0, got %d", c.Workers)
	case c.PlanningBins < 0:
		return bad("planning_bins", "must be >= 0, got %d", c.PlanningBins)
	case !frac(c.CensorFraction) || c.CensorFraction == 0:
		return bad("censor_fraction", "must be in (0, 1], got %v", c.CensorFraction)
	case !frac(c.MinCoverage) || c.MinCoverage == 0:
		return bad("min_coverage", "must be in (0, 1], got %v", c.MinCoverage)
	case c.MaxHold <= 0 || c.MaxReportAge <= 0 || c.MaxStatusAge <= 0:
		return bad("max_hold, max_report_age, max_status_age", "must be > 0")
	case c.RiskHorizon <= 0:
		return bad("risk_horizon", "must be > 0, got %v", c.RiskHorizon)
	case !frac(c.UrgencyThreshold) || c.UrgencyThreshold == 0:
		return bad("urgency_threshold", "must be in (0, 1], got %v", c.UrgencyThreshold)
	case c.Retention < c.MaxHold:
		return bad("retention", "%v is shorter than max_hold %v", c.Retention, c.MaxHold)
	}
	inv := c.Inventory
	inv.PickupWeight, inv.ReturnWeight, inv.PlanningBins = c.PickupWeight, c.ReturnWeight, c.PlanningBins
	if err := inv.Validate(); err != nil {
		return bad("weights", "%v", err)
	}
	return nil
}

// inventoryConfig is the chain's configuration with this system's
// weights and planning horizon.
func (c *Config) inventoryConfig() inventory.Config {
	inv := c.Inventory
	inv.PickupWeight, inv.ReturnWeight, inv.PlanningBins = c.PickupWeight, c.ReturnWeight, c.PlanningBins
	return inv
}
