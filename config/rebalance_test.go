package config

import (
	"strings"
	"testing"
	"time"
)

const rebalanceConfig = `
[nats]
listen = "127.0.0.1:-1"

[[models]]
name = "pickups"
bin = "1h"
horizon = 24
[[models.product]]
name = "72"
features = [40.76, -73.99]

[[models]]
name = "returns"
bin = "1h"
horizon = 12
[[models.product]]
name = "72"
features = [40.76, -73.99]

[[rebalance]]
name = "citibike"
pickups = "pickups"
returns = "returns"
planning_bins = 12
return_weight = 0.5
max_hold = "5m"
risk_horizon = "2h"
urgency_threshold = 0.6
`

func TestDecodeRebalanceConfig(t *testing.T) {
	c, err := DecodeConfig([]byte(rebalanceConfig))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rebalance) != 1 {
		t.Fatalf("%d [[rebalance]] entries", len(c.Rebalance))
	}
	rc := &c.Rebalance[0]
	if rc.StatusFeed() != "citibike" || rc.PlanningBins != 12 || rc.PickupWeight != nil || *rc.ReturnWeight != 0.5 || rc.CensorFraction != nil ||
		rc.MaxHold.Duration != 5*time.Minute || rc.MaxReportAge.Duration != 0 || rc.RiskHorizon.Duration != 2*time.Hour || *rc.UrgencyThreshold != 0.6 {
		t.Fatalf("entry %+v", rc)
	}
}

func TestDecodeRebalanceConfigErrors(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{`returns = "returns"`, `returns = "pickups"`, "two different model names required"},
		{`returns = "returns"`, `returns = "nobody"`, `returns: no model named "nobody"`},
		{`planning_bins = 12`, `planning_bins = 13`, "planning_bins: 13 is not within 0..12"},
		{`name = "citibike"`, `name = "pickups"`, "already a model's"},
		{`return_weight = 0.5`, `return_weight = -1.0`, "return_weight: -1 is outside [0, +Inf]"},
		{`max_hold = "5m"`, `censor_fraction = 0.0`, "censor_fraction: 0 is outside (0, 1]"},
		{`max_hold = "5m"`, `min_coverage = 1.5`, "min_coverage"},
		{`urgency_threshold = 0.6`, `urgency_threshold = 0.0`, "urgency_threshold: 0 is outside (0, 1]"},
		{`urgency_threshold = 0.6`, `urgency_threshold = 1.5`, "urgency_threshold: 1.5 is outside (0, 1]"},
		{`risk_horizon = "2h"`, `risk_horizon = "-1h"`, "risk_horizon: must be > 0"},
		{`max_hold = "5m"`, `maxhold = "5m"`, `unknown key "rebalance.maxhold"`},
		{"horizon = 12", "horizon = 0", "forecast horizon of at least 1 bin"},
		{"name = \"returns\"\nbin = \"1h\"", "name = \"returns\"\nbin = \"30m\"", "same bin and origin"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if !strings.Contains(rebalanceConfig, tc.from) {
				t.Fatalf("%q not in the config", tc.from)
			}
			_, err := DecodeConfig([]byte(strings.Replace(rebalanceConfig, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestRebalanceLikelihoods: a [[rebalance]] entry accepts pickups and
// returns models whose latent is the demand (gaussian, tobit,
// diffusion) and refuses, naming the model, the likelihood and why,
// the count likelihoods whose latent is a log-rate.
func TestRebalanceLikelihoods(t *testing.T) {
	for _, tc := range []struct {
		likelihood string
		ok         bool
	}{{"gaussian", true}, {"tobit", true}, {"diffusion", true}, {"poisson", false}, {"censored-poisson", false}} {
		for _, flow := range []string{"pickups", "returns"} {
			t.Run(tc.likelihood+"/"+flow, func(t *testing.T) {
				from := map[string]string{"pickups": "horizon = 24", "returns": "horizon = 12"}[flow]
				to := from + "\n[models.model]\nlikelihood = \"" + tc.likelihood + "\""
				if !strings.Contains(rebalanceConfig, from) {
					t.Fatalf("%q not in the config", from)
				}
				c, err := DecodeConfig([]byte(strings.Replace(rebalanceConfig, from, to, 1)))
				if tc.ok {
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range c.Models {
						if m.Name == flow && m.Model.Likelihood != tc.likelihood {
							t.Fatalf("model %s has likelihood %q", flow, m.Model.Likelihood)
						}
					}
					return
				}
				want := "rebalance[0] (citibike)." + flow + ": model \"" + flow + "\" has likelihood \"" + tc.likelihood + "\": its latent is a log-rate"
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v, want one containing %q", err, want)
				}
			})
		}
	}
}
