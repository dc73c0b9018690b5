package config

import (
	"fmt"
	"math"
	"slices"
)

// RebalanceConfig is one [[rebalance]] entry: a bike-share system's
// pickups model and returns model over the same stations, joined with
// its station status feed (dcgpd.toml documents every key). A key left
// out (nil, 0) takes package rebalance's default.
type RebalanceConfig struct {
	// Name names the system: risk on <prefix>.risk.<name>, bucket keys
	// <name>.<station>, rejected status on <prefix>.rejected.<name>.
	Name string `toml:"name"`
	// Pickups and Returns name two [[models]] entries.
	Pickups string `toml:"pickups"`
	Returns string `toml:"returns"`
	// Feed is the status subject's last token: <prefix>.status.<feed>
	// (default: name).
	Feed string `toml:"feed"`
	// PlanningBins is the UDF's horizon (0: the models' horizon).
	PlanningBins int      `toml:"planning_bins"`
	PickupWeight *float64 `toml:"pickup_weight"`
	ReturnWeight *float64 `toml:"return_weight"`
	// CensorFraction and MinCoverage: see package rebalance.
	CensorFraction *float64 `toml:"censor_fraction"`
	MinCoverage    *float64 `toml:"min_coverage"`
	MaxHold        Duration `toml:"max_hold"`
	MaxReportAge   Duration `toml:"max_report_age"`
	MaxStatusAge   Duration `toml:"max_status_age"`
	// RiskHorizon is the horizon of the stated P(empty) and P(full) and
	// of a move's urgency and by-when; UrgencyThreshold the probability
	// at which a move is urgent (see package rebalance).
	RiskHorizon      Duration `toml:"risk_horizon"`
	UrgencyThreshold *float64 `toml:"urgency_threshold"`
	// FeedSource: the GBFS feed the daemon polls itself (config/feed.go).
	FeedSource
}

// StatusFeed is the entry's status feed name.
func (rc *RebalanceConfig) StatusFeed() string {
	if rc.Feed != "" {
		return rc.Feed
	}
	return rc.Name
}

// validateRebalance checks the [[rebalance]] entries against the models
// (the daemon compares the product sets when it builds the models).
func (c *Config) validateRebalance() error {
	models := map[string]*ModelConfig{}
	for i := range c.Models {
		models[c.Models[i].Name] = &c.Models[i]
	}
	var names, feeds []string
	for i := range c.Rebalance {
		rc := &c.Rebalance[i]
		bad := func(key, format string, a ...any) error {
			return fmt.Errorf("rebalance[%d] (%s).%s: %s", i, rc.Name, key, fmt.Sprintf(format, a...))
		}
		switch {
		case !nameRe.MatchString(rc.Name):
			return bad("name", "%q must be letters, digits, '-' or '_'", rc.Name)
		case models[rc.Name] != nil || slices.Contains(names, rc.Name):
			return bad("name", "%q is already a model's or another entry's name (they share the rejected subject)", rc.Name)
		case !nameRe.MatchString(rc.StatusFeed()) || slices.Contains(feeds, rc.StatusFeed()):
			return bad("feed", "%q must be letters, digits, '-' or '_', one entry per feed", rc.StatusFeed())
		case c.Cluster.Enabled:
			return bad("name", "rebalancing is not available with cluster.enabled (it needs both models in one instance)")
		}
		if err := rc.validateFeed(bad); err != nil {
			return err
		}
		names, feeds = append(names, rc.Name), append(feeds, rc.StatusFeed())
		p, r := models[rc.Pickups], models[rc.Returns]
		switch {
		case rc.Pickups == rc.Returns:
			return bad("returns", "two different model names required, got %q twice", rc.Pickups)
		case p == nil:
			return bad("pickups", "no model named %q", rc.Pickups)
		case r == nil:
			return bad("returns", "no model named %q", rc.Returns)
		case p.Bin != r.Bin || !p.Origin.Equal(r.Origin):
			return bad("returns", "models %q and %q must have the same bin and origin", rc.Pickups, rc.Returns)
		case p.Horizon < 1 || r.Horizon < 1:
			return bad("pickups", "both models need a forecast horizon of at least 1 bin")
		case rc.PlanningBins < 0 || rc.PlanningBins > min(p.Horizon, r.Horizon):
			return bad("planning_bins", "%d is not within 0..%d (the models' horizon)", rc.PlanningBins, min(p.Horizon, r.Horizon))
		}
		for _, m := range []struct {
			key string
			m   *ModelConfig
		}{{"pickups", p}, {"returns", r}} {
			if err := rateLatent(m.m); err != nil {
				return bad(m.key, "%v", err)
			}
		}
		for _, f := range []struct {
			key      string
			v        *float64
			lo, hi   float64
			loClosed bool
		}{{"pickup_weight", rc.PickupWeight, 0, math.Inf(1), true}, {"return_weight", rc.ReturnWeight, 0, math.Inf(1), true},
			{"censor_fraction", rc.CensorFraction, 0, 1, false}, {"min_coverage", rc.MinCoverage, 0, 1, false},
			{"urgency_threshold", rc.UrgencyThreshold, 0, 1, false}} {
			if f.v == nil {
				continue
			}
			if v := *f.v; math.IsNaN(v) || v > f.hi || math.IsInf(v, 0) || v < f.lo || (!f.loClosed && v == f.lo) {
				return bad(f.key, "%v is outside %s%v, %v]", v, map[bool]string{true: "[", false: "("}[f.loClosed], f.lo, f.hi)
			}
		}
		for _, d := range []struct {
			key string
			v   Duration
		}{{"max_hold", rc.MaxHold}, {"max_report_age", rc.MaxReportAge}, {"max_status_age", rc.MaxStatusAge}, {"risk_horizon", rc.RiskHorizon}} {
			if d.v.Duration < 0 {
				return bad(d.key, "must be > 0 (left out: the default), got %v", d.v)
			}
		}
	}
	return nil
}

// rateLatent refuses a model whose latent is not the demand the risk
// chain takes: the chain's rate is max(f, 0) of the forecast latent f,
// which is the demand for the gaussian, tobit and diffusion likelihoods
// but a log-rate for the count likelihoods (poisson, censored-poisson),
// whose rate exp(f) the chain does not integrate.
func rateLatent(m *ModelConfig) error {
	switch l := m.Model.Likelihood; l {
	case "poisson", "censored-poisson":
		return fmt.Errorf("model %q has likelihood %q: its latent is a log-rate (rate exp(f)), and the risk chain takes the demand itself (rate max(f, 0)); use a gaussian, tobit or diffusion model for rebalancing", m.Name, l)
	}
	return nil
}
