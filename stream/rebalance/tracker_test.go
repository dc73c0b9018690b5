package rebalance

import (
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

var t0 = time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

func ip(v int) *int { return &v }

// st is a sample of station "a" (capacity 10) with bikes bikes, reported
// at the snapshot.
func st(bikes int, mods ...func(*stationstatus.Sample)) stationstatus.Sample {
	s := stationstatus.Sample{Station: "a", Capacity: ip(10), BikesAvailable: bikes, DocksAvailable: ip(10 - bikes),
		Installed: true, Renting: true, Returning: true}
	for _, m := range mods {
		m(&s)
	}
	return s
}

func notRenting(s *stationstatus.Sample)   { s.Renting = false }
func notReturning(s *stationstatus.Sample) { s.Returning = false }
func notInstalled(s *stationstatus.Sample) { s.Installed = false }

// feed ingests samples of station "a" at the given minutes.
func feed(tr *Tracker, minutes []int, samples []stationstatus.Sample, reportedBefore time.Duration) {
	for i, m := range minutes {
		s := samples[i]
		s.LastReported = at(m).Add(-reportedBefore)
		tr.Ingest(&stationstatus.Message{Schema: 1, Feed: "f", At: at(m), Stations: []stationstatus.Sample{s}})
	}
}

func TestBlocked(t *testing.T) {
	cfg := DefaultConfig() // hold 15 min, coverage 0.5
	for _, tc := range []struct {
		name             string
		minutes          []int
		samples          []stationstatus.Sample
		reported         time.Duration
		known            bool
		coverage         float64
		pickups, returns float64
	}{
		{"empty 20 of 60 minutes", []int{0, 10, 20, 30, 40, 50}, []stationstatus.Sample{st(3), st(0), st(0), st(2), st(5), st(6)}, 0,
			true, 1, 20.0 / 60, 0},
		{"full 10 minutes, a sample before the bin holds in", []int{-5, 5, 15, 25, 35, 45, 55}, []stationstatus.Sample{st(10), st(9), st(9), st(9), st(9), st(10), st(9)}, 0,
			true, 1, 0, 15.0 / 60},
		{"a gap longer than max_hold is not covered", []int{0, 40}, []stationstatus.Sample{st(0), st(4)}, 0,
			true, 30.0 / 60, 15.0 / 30, 0}, // 0-15 empty, 40-55 not
		{"too little covered: unknown", []int{0}, []stationstatus.Sample{st(0)}, 0,
			false, 15.0 / 60, 0, 0},
		{"stale reports are no evidence", []int{0, 10, 20, 30, 40, 50}, []stationstatus.Sample{st(0), st(0), st(0), st(0), st(0), st(0)}, 2 * time.Hour,
			false, 0, 0, 0},
		{"not renting blocks pickups, not returning returns", []int{0, 15, 30, 45}, []stationstatus.Sample{st(5, notRenting), st(5), st(5, notReturning), st(5)}, 0,
			true, 1, 0.25, 0.25},
		{"not installed blocks both", []int{0, 15, 30, 45}, []stationstatus.Sample{st(5, notInstalled), st(5), st(5), st(5)}, 0,
			true, 1, 0.25, 0.25},
		{"samples after the bin do not count", []int{0, 15, 30, 45, 60, 70}, []stationstatus.Sample{st(5), st(5), st(5), st(5), st(0), st(10)}, 0,
			true, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(cfg, []string{"a"})
			feed(tr, tc.minutes, tc.samples, tc.reported)
			b := tr.Blocked("a", at(0), at(60))
			const tol = 1e-12
			if b.Known != tc.known || math.Abs(b.Coverage-tc.coverage) > tol || math.Abs(b.Pickups-tc.pickups) > tol || math.Abs(b.Returns-tc.returns) > tol {
				t.Fatalf("got %+v, want known %v coverage %v pickups %v returns %v", b, tc.known, tc.coverage, tc.pickups, tc.returns)
			}
		})
	}
}

func TestIngestOrderAndRetention(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Retention = time.Hour
	tr := NewTracker(cfg, []string{"a"})
	// Out of order, a repeat, and another system's station.
	feed(tr, []int{20, 0, 10, 10}, []stationstatus.Sample{st(0), st(5), st(5), st(0)}, 0)
	res := tr.Ingest(&stationstatus.Message{Schema: 1, Feed: "f", At: at(30), Stations: []stationstatus.Sample{
		func() stationstatus.Sample { s := st(5); s.LastReported = at(30); return s }(),
		{Station: "elsewhere", LastReported: at(30)}}})
	if res.Kept != 1 || res.Ignored != 1 {
		t.Fatalf("ingest %+v, want 1 kept, 1 ignored", res)
	}
	b := tr.Blocked("a", at(0), at(30))
	if !b.Known || math.Abs(b.Pickups-20.0/30) > 1e-12 {
		t.Fatalf("blocked %+v, want 20 of 30 minutes (the repeat at 10 replaced)", b)
	}
	// 3 h later only the last sample before the retention is kept.
	feed(tr, []int{200}, []stationstatus.Sample{st(4)}, 0)
	if n := len(tr.stations["a"]); n != 2 {
		t.Fatalf("%d samples kept after the retention, want 2", n)
	}
	if s, when, ok := tr.Latest("a", at(100)); !ok || !when.Equal(at(30)) || s.BikesAvailable != 5 {
		t.Fatalf("latest at 100 min: %+v %v %v", s, when, ok)
	}
}

func TestCensor(t *testing.T) {
	cfg := DefaultConfig() // censor at 10% of the bin
	tr := NewTracker(cfg, []string{"a", "b", "c"})
	// a: empty 15 of 60 minutes; b: empty 5 of 60 (below 10%); c: no status.
	for _, m := range []int{0, 15, 30, 45, 55} {
		a, b := st(4), st(4)
		a.LastReported, b.LastReported = at(m), at(m)
		b.Station = "b"
		if m == 15 {
			a.BikesAvailable, a.DocksAvailable = 0, ip(10)
		}
		if m == 55 {
			b.BikesAvailable, b.DocksAvailable = 0, ip(10)
		}
		tr.Ingest(&stationstatus.Message{Schema: 1, Feed: "f", At: at(m), Stations: []stationstatus.Sample{a, b}})
	}
	names := []string{"a", "b", "c", "a"}
	obs := []cvi.Obs{{Y: 3, Supply: math.Inf(1)}, {Y: 2, Supply: math.Inf(1)}, {Y: 1, Supply: math.Inf(1)}, {Y: math.NaN(), Supply: math.Inf(1)}}
	res := tr.Censor(Pickups, names, obs, at(0), at(60))
	if res != (CensorResult{Censored: 1, Uncensored: 1, Unknown: 1}) {
		t.Fatalf("result %+v", res)
	}
	want := []cvi.Obs{{Y: 3, Supply: 3, Censored: true}, {Y: 2, Supply: math.Inf(1)}, {Y: 1, Supply: math.Inf(1)}}
	for i, w := range want {
		if obs[i] != w {
			t.Errorf("obs %d: %+v, want %+v", i, obs[i], w)
		}
	}
	if !math.IsNaN(obs[3].Y) || obs[3].Censored {
		t.Errorf("an unobserved bin changed: %+v", obs[3])
	}
	// Returns: a was never full.
	obs = []cvi.Obs{{Y: 3, Supply: 7, Censored: true}}
	if res := tr.Censor(Returns, []string{"a"}, obs, at(0), at(60)); res.Uncensored != 1 || !obs[0].Censored || obs[0].Supply != 7 {
		t.Fatalf("the sender's censoring was not kept: %+v %+v", res, obs[0])
	}
}
