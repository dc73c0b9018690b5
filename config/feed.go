package config

import (
	"net/url"
	"strings"
)

// FeedSource is the part of a [[rebalance]] entry that names a GBFS feed
// the daemon polls itself: with GBFSURL set, `dcgpd serve` reads the
// feed's stations (ids, names, coordinates, capacities) at start, polls
// its station_status in process (publishing on <prefix>.status.<feed>
// as `dcgpd gbfs` would) and derives each bin's pickups and returns from
// the status samples, published as observations of the two models. A
// key left out (0, "") takes the default of package stream/gbfs or
// stream/statusflow (dcgpd.toml documents them).
type FeedSource struct {
	// GBFSURL is the system's auto-discovery file (gbfs.json); empty: the
	// status comes from elsewhere (`dcgpd gbfs`).
	GBFSURL string `toml:"gbfs_url"`
	// GBFSLanguage picks a 2.3 feed list and 3.0 station names.
	GBFSLanguage string `toml:"gbfs_language"`
	// GBFSMinInterval and GBFSMaxInterval bound the poll interval (the
	// feed's ttl); GBFSTimeout bounds each request.
	GBFSMinInterval Duration `toml:"gbfs_min_interval"`
	GBFSMaxInterval Duration `toml:"gbfs_max_interval"`
	GBFSTimeout     Duration `toml:"gbfs_timeout"`
	// FlowMaxGap is the longest poll interval whose change is counted in
	// a bin; FlowTruckWindow the span of a rebalancing truck's run
	// (package statusflow). FlowNoTrucks turns the truck detector off.
	FlowMaxGap      Duration `toml:"flow_max_gap"`
	FlowTruckWindow Duration `toml:"flow_truck_window"`
	FlowNoTrucks    bool     `toml:"flow_no_trucks"`
	// StationsFile keeps the station list read from the feed at the first
	// start (a products CSV: product,lat,lon,capacity), so that a restart
	// serves the same stations as the snapshots; relative to the working
	// directory (default "dcgpd-data/<name>.stations.csv").
	StationsFile string `toml:"stations_file"`
}

// FromFeed reports whether the entry polls a GBFS feed itself.
func (f *FeedSource) FromFeed() bool { return f.GBFSURL != "" }

// StationsPath is where the entry keeps its feed's station list.
func (rc *RebalanceConfig) StationsPath() string {
	if rc.StationsFile != "" {
		return rc.StationsFile
	}
	return "dcgpd-data/" + rc.Name + ".stations.csv"
}

// validateFeed checks an entry's feed keys; bad formats the error with
// the entry and key.
func (f *FeedSource) validateFeed(bad func(key, format string, a ...any) error) error {
	if f.GBFSURL == "" {
		for _, k := range []struct {
			key string
			set bool
		}{{"gbfs_language", f.GBFSLanguage != ""}, {"gbfs_min_interval", f.GBFSMinInterval.Duration != 0},
			{"gbfs_max_interval", f.GBFSMaxInterval.Duration != 0}, {"gbfs_timeout", f.GBFSTimeout.Duration != 0},
			{"flow_max_gap", f.FlowMaxGap.Duration != 0}, {"flow_truck_window", f.FlowTruckWindow.Duration != 0},
			{"flow_no_trucks", f.FlowNoTrucks}, {"stations_file", f.StationsFile != ""}} {
			if k.set {
				return bad(k.key, "needs gbfs_url (the feed the daemon polls); without it the status comes from `dcgpd gbfs`")
			}
		}
		return nil
	}
	u, err := url.Parse(f.GBFSURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("gbfs_url", "%q: want the absolute http(s) URL of the system's gbfs.json", f.GBFSURL)
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"gbfs_min_interval", f.GBFSMinInterval}, {"gbfs_max_interval", f.GBFSMaxInterval}, {"gbfs_timeout", f.GBFSTimeout},
		{"flow_max_gap", f.FlowMaxGap}, {"flow_truck_window", f.FlowTruckWindow}} {
		if d.v.Duration < 0 {
			return bad(d.key, "must be > 0 (left out: the default), got %v", d.v)
		}
	}
	if lo, hi := f.GBFSMinInterval.Duration, f.GBFSMaxInterval.Duration; lo > 0 && hi > 0 && hi < lo {
		return bad("gbfs_max_interval", "%v is below gbfs_min_interval %v", f.GBFSMaxInterval, f.GBFSMinInterval)
	}
	if strings.ContainsAny(f.GBFSLanguage, " \t\r\n") {
		return bad("gbfs_language", "%q: want a language tag such as \"en\"", f.GBFSLanguage)
	}
	return nil
}

// markFeedModels lets the models of an entry that polls a GBFS feed leave
// out their products: the daemon takes the feed's stations.
func (c *Config) markFeedModels() {
	feed := map[string]bool{}
	for i := range c.Rebalance {
		if rc := &c.Rebalance[i]; rc.FromFeed() {
			feed[rc.Pickups], feed[rc.Returns] = true, true
		}
	}
	for i := range c.Models {
		c.Models[i].fromFeed = feed[c.Models[i].Name]
	}
}

// FeedProducts names the products of model m: its stations come from a
// GBFS feed (a products CSV the daemon writes at start), so that
// Validate takes it without products.
func (m *ModelConfig) FeedProducts() bool { return m.fromFeed }
