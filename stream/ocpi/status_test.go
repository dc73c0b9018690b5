package ocpi

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)

func at(min float64) time.Time { return t0.Add(time.Duration(min * float64(time.Minute))) }

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
