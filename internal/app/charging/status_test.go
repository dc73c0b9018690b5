package charging

import (
	"math"
	"testing"
	"time"
)

func TestSupplyFromStatus(t *testing.T) {
	ev := func(evse string, st Status, min float64) StatusEvent {
		return StatusEvent{Site: "s", EVSE: evse, Status: st, At: at(min)}
	}
	cases := []struct {
		name   string
		events []StatusEvent
		want   []BinSupply
	}{
		{
			name:   "nothing seen: unknown, not censored",
			events: nil,
			want:   []BinSupply{{}, {}},
		},
		{
			name: "two EVSEs: one taken at 1, the other at 2, one freed at 7",
			events: []StatusEvent{ev("e1", StatusAvailable, -10), ev("e2", StatusAvailable, -10),
				ev("e1", StatusCharging, 1), ev("e2", StatusBlocked, 2), ev("e1", StatusAvailable, 7)},
			// bin 0: 2 available at start, full from 2 to 5 (0.6), mean (1·2 + 1·1 + 3·0)/5 = 0.6
			// bin 1: 0 at start, e1 freed at 7: supply 1, full 2/5, mean 3/5
			want: []BinSupply{{Supply: 2, FullFraction: 0.6, Available: 0.6, Known: true},
				{Supply: 1, FullFraction: 0.4, Available: 0.6, Known: true}},
		},
		{
			name: "out of order and unknown are not available; a repeated AVAILABLE counts once",
			events: []StatusEvent{ev("e1", StatusOutOfOrder, -1), ev("e2", StatusAvailable, -1),
				ev("e2", StatusAvailable, 3), ev("e2", StatusUnknown, 6), ev("e1", StatusAvailable, 8)},
			want: []BinSupply{{Supply: 1, FullFraction: 0, Available: 1, Known: true},
				{Supply: 2, FullFraction: 0.4, Available: 0.6, Known: true}},
		},
		{
			name:   "first status inside the bin",
			events: []StatusEvent{ev("e1", StatusCharging, 2), ev("e1", StatusAvailable, 4)},
			want:   []BinSupply{{Supply: 1, FullFraction: 0.4, Available: 0.2, Known: true}, {Supply: 1, Available: 1, Known: true}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SupplyFromStatus(tc.events, t0, 5*time.Minute, len(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			for b, w := range tc.want {
				g := got[b]
				if g.Supply != w.Supply || g.Known != w.Known || math.Abs(g.FullFraction-w.FullFraction) > 1e-12 || math.Abs(g.Available-w.Available) > 1e-12 {
					t.Errorf("bin %d: got %+v, want %+v", b, g, w)
				}
				if g.Censored() != (w.Known && w.FullFraction > 0) {
					t.Errorf("bin %d: censored %v", b, g.Censored())
				}
			}
		})
	}
	if _, err := SupplyFromStatus([]StatusEvent{ev("e1", "FREE", 0)}, t0, time.Minute, 1); err == nil {
		t.Error("an unknown status was accepted")
	}
}

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
		events := make([]StatusEvent, 0)
		for i := range free {
			events = append(events, StatusEvent{Site: site.Name, EVSE: string(rune('A' + i)), Status: StatusAvailable, At: cfg.Start.Add(-time.Hour)})
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
			events = append(events, StatusEvent{Site: site.Name, EVSE: name, Status: StatusCharging, At: a.Time},
				StatusEvent{Site: site.Name, EVSE: name, Status: StatusAvailable, At: end})
		}
		bs, err := SupplyFromStatus(events, cfg.Start, 5*time.Minute, nb)
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
