package charging

import (
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// TestStatusMatchesSessions: statuses derived from the protocol's own
// served sessions (Outcome.EVSEStatus: AVAILABLE when a charger frees,
// CHARGING when taken) give the converter's supply, full fraction and censoring in every bin.
func TestStatusMatchesSessions(t *testing.T) {
	cfg := DefaultSynthConfig()
	cfg.Days, cfg.PerDay = 3, 40
	ss, err := Synthesize(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sites := []Site{{Name: "a", Lat: 34.137, Lon: -118.125, Pool: 2}, {Name: "b", Lat: 34.140, Lon: -118.125, Pool: 3}}
	o, err := Simulate(ss, GroupChargers(Chargers(ss), sites), Protocol{Divert: 0.5, Lengthscale: 400, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	nb := cfg.Days * 288
	tb, err := o.Bins(cfg.Start, 5*time.Minute, nb)
	if err != nil {
		t.Fatal(err)
	}
	all, err := o.EVSEStatus(cfg.Start.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for s, site := range sites {
		var events []ocpi.StatusEvent
		for _, e := range all {
			if e.Site == site.Name {
				events = append(events, e)
			}
		}
		bs, err := ocpi.SupplyFromStatus(events, cfg.Start, 5*time.Minute, nb)
		if err != nil {
			t.Fatal(err)
		}
		var censored int
		for b := range bs {
			c := tb.Cells[b][s]
			if bs[b].Censored() != c.Censored || math.Abs(bs[b].FullFraction-c.FullFraction) > 1e-9 ||
				math.Abs(bs[b].Available-(float64(site.Pool)-c.Occupancy)) > 1e-9 {
				t.Fatalf("site %s bin %d: from status %+v, from sessions %+v", site.Name, b, bs[b], c)
			}
			if !c.Censored && bs[b].Supply != c.Supply {
				t.Fatalf("site %s bin %d: supply %d from status, %d from sessions", site.Name, b, bs[b].Supply, c.Supply)
			}
			if c.Censored {
				censored++
			}
		}
		if censored == 0 {
			t.Fatalf("site %s never full: the test checks nothing about censoring", site.Name)
		}
	}
}
