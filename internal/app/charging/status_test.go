package charging

import (
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// TestStatusMatchesSessions: statuses derived from the protocol's own
// served sessions (AVAILABLE when a charger frees, CHARGING when taken)
// give the converter's supply, full fraction and censoring in every bin.
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
	for s, site := range sites {
		// Assign each served session a charger slot of the site's pool,
		// the first free one, and emit its statuses.
		free := make([]time.Time, site.Pool)
		events := make([]ocpi.StatusEvent, 0)
		for i := range free {
			events = append(events, ocpi.StatusEvent{Site: site.Name, EVSE: string(rune('A' + i)), Status: ocpi.StatusAvailable, At: cfg.Start.Add(-time.Hour)})
		}
		for _, a := range o.Arrivals {
			if a.ServedAt != s {
				continue
			}
			slot := -1
			for i, f := range free {
				if !f.After(a.Time) {
					slot = i
					break
				}
			}
			if slot < 0 {
				t.Fatalf("site %s: no free slot at %s for a served session", site.Name, a.Time)
			}
			end := a.Time.Add(a.Duration)
			free[slot] = end
			name := string(rune('A' + slot))
			events = append(events, ocpi.StatusEvent{Site: site.Name, EVSE: name, Status: ocpi.StatusCharging, At: a.Time},
				ocpi.StatusEvent{Site: site.Name, EVSE: name, Status: ocpi.StatusAvailable, At: end})
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
