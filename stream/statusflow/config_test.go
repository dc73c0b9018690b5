package statusflow

import (
	"math"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"no origin", func(c *Config) { c.Origin = time.Time{} }},
		{"zero bin", func(c *Config) { c.Bin = 0 }},
		{"negative gap", func(c *Config) { c.MaxGap = -time.Second }},
		{"zero window", func(c *Config) { c.TruckWindow = 0 }},
		{"one-bike truck", func(c *Config) { c.TruckMin = 1 }},
		{"huge truck", func(c *Config) { c.TruckMin = 5000 }},
		{"NaN fraction", func(c *Config) { c.HiddenFraction = math.NaN() }},
		{"fraction 1", func(c *Config) { c.HiddenFraction = 1 }},
		{"NaN alpha", func(c *Config) { c.TruckAlpha = math.NaN() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			if err := c.Validate(); err == nil {
				t.Fatal("accepted")
			}
			if _, err := New(c); err == nil {
				t.Fatal("New accepted")
			}
		})
	}
	c := DefaultConfig()
	c.DetectTrucks, c.TruckMin = false, 0
	if err := c.Validate(); err != nil {
		t.Fatalf("truck_min is not needed without detection: %v", err)
	}
}
