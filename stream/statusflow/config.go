package statusflow

import (
	"fmt"
	"math"
	"time"
)

// Config is a Deriver's grid and detection settings.
type Config struct {
	// Origin and Bin define the grid: bin k covers (Origin + k·Bin,
	// Origin + (k+1)·Bin].
	Origin time.Time
	Bin    time.Duration
	// MaxGap is the longest interval between two samples of a station
	// whose change is attributed to a bin; a longer interval is a gap: its
	// change is not placed in any bin and the time it spans is not
	// covered.
	MaxGap time.Duration
	// DetectTrucks turns on the rebalancing detector: a run of
	// consecutive intervals, each with bikes leaving (or each with bikes
	// arriving), that lies within TruckWindow (or is a single interval),
	// moves at least TruckMin bikes, and is more than riders at the
	// station's recent rate that way would move in its time with
	// probability TruckAlpha (Poisson tail), is a truck move, excluded
	// from the flows and counted as moved.
	DetectTrucks bool
	TruckMin     int
	TruckWindow  time.Duration
	TruckAlpha   float64
	// HiddenFraction is the share of a bin's smaller flow above which the
	// expected number of pickup–return pairs hidden inside poll intervals
	// marks the bin's counts as censored from below.
	HiddenFraction float64
}

// DefaultConfig is an hourly grid from the Unix epoch, gaps above 10
// minutes, trucks of 4 or more bikes within 5 minutes that riders would
// match with probability below 0.001, and a 5% hidden share.
func DefaultConfig() Config {
	return Config{
		Origin:         time.Unix(0, 0).UTC(),
		Bin:            time.Hour,
		MaxGap:         10 * time.Minute,
		DetectTrucks:   true,
		TruckMin:       4,
		TruckWindow:    5 * time.Minute,
		TruckAlpha:     1e-3,
		HiddenFraction: 0.05,
	}
}

// maxTruckMin bounds TruckMin (no truck carries more).
const maxTruckMin = 1000

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Origin.IsZero():
		return fmt.Errorf("statusflow: origin is not set")
	case c.Bin <= 0:
		return fmt.Errorf("statusflow: bin %v is not positive", c.Bin)
	case c.MaxGap <= 0:
		return fmt.Errorf("statusflow: max_gap %v is not positive", c.MaxGap)
	case c.TruckWindow <= 0:
		return fmt.Errorf("statusflow: truck_window %v is not positive", c.TruckWindow)
	case c.DetectTrucks && (c.TruckMin < 2 || c.TruckMin > maxTruckMin):
		return fmt.Errorf("statusflow: truck_min %d outside 2..%d (a single bike is a rider)", c.TruckMin, maxTruckMin)
	case c.DetectTrucks && !(c.TruckAlpha > 0 && c.TruckAlpha < 1):
		return fmt.Errorf("statusflow: truck_alpha %v outside (0, 1)", c.TruckAlpha)
	case math.IsNaN(c.HiddenFraction) || c.HiddenFraction <= 0 || c.HiddenFraction >= 1:
		return fmt.Errorf("statusflow: hidden_fraction %v outside (0, 1)", c.HiddenFraction)
	}
	return nil
}

// lag is how long after a bin's end the bin is emitted: every interval
// ending in it and every truck run touching it are then known.
func (c Config) lag() time.Duration { return max(c.MaxGap, c.TruckWindow) }
