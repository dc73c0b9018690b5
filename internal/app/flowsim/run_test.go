package flowsim

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// synthetic is a world of np stations over nh hours with Poisson-ish
// hourly counts around rate.
func synthetic(np, nh int, rate float64) *World {
	r := rand.New(rand.NewPCG(7, 7))
	w := &World{Start: time.Date(2018, 6, 1, 0, 0, 0, 0, time.UTC)}
	for k := range np {
		w.Names = append(w.Names, string(rune('a'+k)))
		w.Capacity = append(w.Capacity, 20)
	}
	for range nh {
		p, d := make([]float64, np), make([]float64, np)
		for k := range np {
			p[k], d[k] = float64(r.IntN(int(2*rate)+1)), float64(r.IntN(int(2*rate)+1))
		}
		w.Pickups, w.Returns = append(w.Pickups, p), append(w.Returns, d)
	}
	return w
}

func TestRunWithoutTrucks(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.TruckDaily = 0
	res, err := Run(synthetic(3, 48, 6), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.StationHours != 144 || res.TruckBikes != 0 || res.Pickups == 0 {
		t.Fatalf("totals %+v", res)
	}
	prev := map[bool]float64{}
	for _, s := range res.Scores {
		if s.Bins != 144 {
			t.Errorf("%v: %d bins, want 144", s.Variant, s.Bins)
		}
		// Without trucks every derived count is a lower bound, hour by hour.
		if s.Above != 0 || s.PickupBias > 0 || s.ReturnBias > 0 {
			t.Errorf("%v: %d hours above the truth, biases %.3f %.3f", s.Variant, s.Above, s.PickupBias, s.ReturnBias)
		}
		// A longer poll loses at least as much (same world, nested polls).
		if s.Detect {
			continue
		}
		if b, ok := prev[s.IDs]; ok && s.PickupBias > b {
			t.Errorf("%v: bias %.3f above the shorter poll's %.3f", s.Variant, s.PickupBias, b)
		}
		prev[s.IDs] = s.PickupBias
	}
}

func TestRunTrucks(t *testing.T) {
	cfg := DefaultConfig(2)
	cfg.TruckDaily = 1
	res, err := Run(synthetic(3, 72, 2), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.TruckBikes == 0 {
		t.Fatal("no truck moved a bike")
	}
	for _, s := range res.Scores {
		switch {
		case !s.Detect && s.Moved != 0:
			t.Errorf("%v: moved %d with detection off", s.Variant, s.Moved)
		case s.Detect && s.Moved == 0:
			t.Errorf("%v: detected no truck move of %d bikes", s.Variant, res.TruckBikes)
		}
	}
	var b strings.Builder
	if err := res.Write(&b, "trucks"); err != nil || strings.Count(b.String(), "\n") != 3+len(res.Scores) {
		t.Fatalf("table: %v\n%s", err, b.String())
	}
}

func TestRunRefuses(t *testing.T) {
	w := synthetic(2, 3, 1)
	for _, tc := range []struct {
		name string
		edit func(*World, *Config)
	}{
		{"fractional count", func(w *World, _ *Config) { w.Pickups[1][0] = 1.5 }},
		{"negative count", func(w *World, _ *Config) { w.Returns[0][1] = -1 }},
		{"no capacity", func(w *World, _ *Config) { w.Capacity[0] = 0 }},
		{"ragged", func(w *World, _ *Config) { w.Pickups[2] = w.Pickups[2][:1] }},
		{"poll not a tick multiple", func(_ *World, c *Config) { c.Polls = []time.Duration{45 * time.Second} }},
		{"duplicate names", func(w *World, _ *Config) { w.Names[1] = w.Names[0] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ww := *w
			ww.Pickups, ww.Returns = clone(w.Pickups), clone(w.Returns)
			ww.Capacity, ww.Names = append([]int(nil), w.Capacity...), append([]string(nil), w.Names...)
			cfg := DefaultConfig(1)
			tc.edit(&ww, &cfg)
			if _, err := Run(&ww, cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func clone(m [][]float64) [][]float64 {
	out := make([][]float64, len(m))
	for i := range m {
		out[i] = append([]float64(nil), m[i]...)
	}
	return out
}
