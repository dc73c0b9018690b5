package config

import (
	"strings"
	"testing"
	"time"
)

const chargingConfig = `
[nats]
listen = "127.0.0.1:-1"

[[models]]
name = "ev"
bin = "5m"
horizon = 12
[[models.product]]
name = "site-north"
features = [34.1395, -118.127]
`

func TestDecodeChargingConfig(t *testing.T) {
	c, err := DecodeConfig([]byte(chargingConfig + "[[charging]]\nmodel = \"ev\"\nmin_coverage = 0.8\nmax_poll_gap = \"2m\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Charging) != 1 {
		t.Fatalf("%d [[charging]] entries", len(c.Charging))
	}
	cc := c.Charging[0]
	if cc.Model != "ev" || cc.MinCoverage == nil || *cc.MinCoverage != 0.8 || cc.MaxPollGap.Duration != 2*time.Minute || cc.CensorFraction != nil {
		t.Errorf("decoded %+v", cc)
	}
}

func TestDecodeChargingConfigErrors(t *testing.T) {
	cases := []struct{ entry, want string }{
		{"model = \"bus\"", "no model named"},
		{"model = \"ev\"\n[[charging]]\nmodel = \"ev\"", "two [[charging]] entries"},
		{"model = \"ev\"\ncensor_fraction = 1.0", "censor_fraction"},
		{"model = \"ev\"\nmin_coverage = 0.0", "min_coverage"},
		{"model = \"ev\"\nmax_poll_gap = \"-1m\"", "max_poll_gap"},
		{"model = \"ev\"\nno_such_key = 1", "no_such_key"},
	}
	for _, c := range cases {
		_, err := DecodeConfig([]byte(chargingConfig + "[[charging]]\n" + c.entry + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.entry, err, c.want)
		}
	}
}
