package config

import (
	"fmt"
	"math"
	"slices"
)

// ChargingConfig is one [[charging]] entry: a model whose products are
// charging sites (OCPI locations), joined with the EVSE statuses `dcgpd
// ocpi` publishes on <prefix>.evse.<model> (dcgpd.toml documents every
// key). A key left out (nil, 0) takes package evsupply's default.
type ChargingConfig struct {
	// Model names a [[models]] entry.
	Model string `toml:"model"`
	// CensorFraction, MinCoverage, MaxPollGap, Retention: see package
	// evsupply.
	CensorFraction *float64 `toml:"censor_fraction"`
	MinCoverage    *float64 `toml:"min_coverage"`
	MaxPollGap     Duration `toml:"max_poll_gap"`
	Retention      Duration `toml:"retention"`
}

// validateCharging checks the [[charging]] entries against the models
// and the [[rebalance]] entries (a model takes one status feed).
func (c *Config) validateCharging() error {
	models := map[string]bool{}
	for i := range c.Models {
		models[c.Models[i].Name] = true
	}
	var seen []string
	for i := range c.Charging {
		cc := &c.Charging[i]
		bad := func(key, format string, a ...any) error {
			return fmt.Errorf("charging[%d] (%s).%s: %s", i, cc.Model, key, fmt.Sprintf(format, a...))
		}
		switch {
		case !models[cc.Model]:
			return bad("model", "no model named %q", cc.Model)
		case slices.Contains(seen, cc.Model):
			return bad("model", "%q has two [[charging]] entries", cc.Model)
		case c.Cluster.Enabled:
			return bad("model", "charger status is not available with cluster.enabled")
		}
		for _, rc := range c.Rebalance {
			if rc.Pickups == cc.Model || rc.Returns == cc.Model {
				return bad("model", "%q is also in [[rebalance]] %q: a model takes one status feed", cc.Model, rc.Name)
			}
		}
		seen = append(seen, cc.Model)
		if v := cc.CensorFraction; v != nil && !(*v >= 0 && *v < 1) {
			return bad("censor_fraction", "%v is outside [0, 1)", *v)
		}
		if v := cc.MinCoverage; v != nil && (math.IsNaN(*v) || *v <= 0 || *v > 1) {
			return bad("min_coverage", "%v is outside (0, 1]", *v)
		}
		if cc.MaxPollGap.Duration < 0 || cc.Retention.Duration < 0 {
			return bad("max_poll_gap, retention", "must be > 0 (left out: the default)")
		}
	}
	return nil
}
