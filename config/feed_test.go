package config

import (
	"strings"
	"testing"
	"time"
)

// feedConfig is a [[rebalance]] entry that polls a GBFS feed; its models
// list no products (the feed's stations).
const feedConfig = `
[nats]
listen = "127.0.0.1:-1"

[[models]]
name = "pickups"
bin = "5s"

[[models]]
name = "returns"
bin = "5s"

[[rebalance]]
name = "demo"
pickups = "pickups"
returns = "returns"
gbfs_url = "https://example.com/gbfs.json"
gbfs_min_interval = "1s"
flow_max_gap = "3s"
`

func TestDecodeFeedConfig(t *testing.T) {
	c, err := DecodeConfig([]byte(feedConfig))
	if err != nil {
		t.Fatal(err)
	}
	rc := &c.Rebalance[0]
	if !rc.FromFeed() || rc.GBFSURL != "https://example.com/gbfs.json" || rc.GBFSMinInterval.Duration != time.Second ||
		rc.FlowMaxGap.Duration != 3*time.Second || rc.FlowTruckWindow.Duration != 0 || rc.FlowNoTrucks {
		t.Fatalf("entry %+v", rc.FeedSource)
	}
	if rc.StationsPath() != "dcgpd-data/demo.stations.csv" {
		t.Errorf("stations file %q", rc.StationsPath())
	}
	for _, m := range c.Models {
		if !m.FeedProducts() {
			t.Errorf("model %s does not take the feed's stations", m.Name)
		}
	}
}

// TestDecodeFeedConfigErrors: each bad value is refused naming the key
// and its line.
func TestDecodeFeedConfigErrors(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{`gbfs_url = "https://example.com/gbfs.json"`, `gbfs_url = "ftp://example.com/gbfs.json"`, "17: rebalance[0] (demo).gbfs_url: \"ftp://example.com/gbfs.json\": want the absolute http(s) URL"},
		{`gbfs_url = "https://example.com/gbfs.json"`, `gbfs_url = "gbfs.json"`, "17: rebalance[0] (demo).gbfs_url"},
		{`gbfs_url = "https://example.com/gbfs.json"`, `gbfs_url = ""`, "5: models[0] (pickups).products: name a products CSV or list [[models.product]] (or take a GBFS feed's stations"},
		{`flow_max_gap = "3s"`, `flow_max_gap = "-3s"`, "19: rebalance[0] (demo).flow_max_gap: must be > 0"},
		{`gbfs_min_interval = "1s"`, `gbfs_min_interval = "1m"` + "\ngbfs_max_interval = \"10s\"", "19: rebalance[0] (demo).gbfs_max_interval: 10s is below gbfs_min_interval 1m0s"},
		{`flow_max_gap = "3s"`, `flow_maxgap = "3s"`, `19: unknown key "rebalance.flow_maxgap"`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if !strings.Contains(feedConfig, tc.from) {
				t.Fatalf("%q not in the config", tc.from)
			}
			bad := strings.Replace(feedConfig, tc.from, tc.to, 1)
			_, err := DecodeConfig([]byte(bad))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestFeedKeysNeedURL: a flow key on an entry fed by `dcgpd gbfs` (no
// gbfs_url) is refused with its line.
func TestFeedKeysNeedURL(t *testing.T) {
	bad := strings.Replace(rebalanceConfig, `max_hold = "5m"`, "max_hold = \"5m\"\nflow_max_gap = \"3s\"", 1)
	_, err := DecodeConfig([]byte(bad))
	want := "28: rebalance[0] (citibike).flow_max_gap: needs gbfs_url"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}
