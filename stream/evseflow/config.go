package evseflow

import (
	"fmt"
	"time"
)

// Config is a Deriver's grid and gap rule. Start from DefaultConfig.
type Config struct {
	// Origin and Bin are the model's grid: bin k is [Origin + k·Bin,
	// Origin + (k+1)·Bin).
	Origin time.Time
	Bin    time.Duration
	// MaxGap is the longest interval between polls whose transitions are
	// counted and whose time is covered.
	MaxGap time.Duration
}

// DefaultConfig: 5-minute bins from the Unix epoch, intervals up to 10
// minutes counted (two missed polls at a 3-minute interval).
func DefaultConfig() Config {
	return Config{Origin: time.Unix(0, 0).UTC(), Bin: 5 * time.Minute, MaxGap: 10 * time.Minute}
}

// Validate reports the first unusable setting.
func (c Config) Validate() error {
	switch {
	case c.Bin <= 0:
		return fmt.Errorf("evseflow: bin %v must be positive", c.Bin)
	case c.MaxGap <= 0:
		return fmt.Errorf("evseflow: max_gap %v must be positive", c.MaxGap)
	}
	return nil
}

// bin returns the index of the bin holding t.
func (c *Config) bin(t time.Time) int64 {
	d := t.Sub(c.Origin)
	k := int64(d / c.Bin)
	if d < 0 && d%c.Bin != 0 {
		k--
	}
	return k
}

// binStart returns bin k's start.
func (c *Config) binStart(k int64) time.Time { return c.Origin.Add(time.Duration(k) * c.Bin) }
