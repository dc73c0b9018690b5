package statusflow

import (
	"errors"
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2018, 6, 1, 10, 0, 0, 0, time.UTC)

// at is t0 plus m minutes and s seconds.
func at(m, s int) time.Time {
	return t0.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
}

func smp(t time.Time, bikes int, ids ...string) Sample {
	return Sample{Station: "s", At: t, Bikes: bikes, Docks: -1, Renting: true, Returning: true, HasVehicles: ids != nil, Vehicles: ids}
}

// derive feeds samples to a Deriver with cfg and returns every bin up to
// two hours after t0.
func derive(t *testing.T, cfg Config, samples []Sample) ([]Bin, Stats) {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if err := d.Add(s); err != nil {
			t.Fatalf("add %v: %v", s.At, err)
		}
	}
	bins, err := d.Advance(t0.Add(3 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return bins, d.Stats()
}

func TestDeriverBins(t *testing.T) {
	// wide takes half-hour polls as intervals, not gaps.
	wide := DefaultConfig()
	wide.MaxGap = 90 * time.Minute
	noTrucks := wide
	noTrucks.DetectTrucks = false
	closed := smp(at(30, 0), 5)
	closed.Renting = false
	closedStart := smp(at(0, 0), 10)
	closedStart.Renting = false
	for _, tc := range []struct {
		name    string
		cfg     Config
		samples []Sample
		want    Bin // the 10:00 bin's counts and flags
	}{
		{"net decrease and increase", wide, []Sample{smp(at(0, 0), 10), smp(at(30, 0), 7), smp(at(60, 0), 9)},
			// Half-hour polls: pairs hide (ExpectedHidden > 5% of 2).
			Bin{Pickups: 3, Returns: 2, Coverage: 1, Observed: true, CensoredBelow: true}},
		{"pickup and return cancel from counts", wide, []Sample{smp(at(0, 0), 2), smp(at(5, 0), 2)},
			Bin{Coverage: 5.0 / 60, Observed: true, CensoredBelow: true}},
		{"ids recover both", wide, []Sample{smp(at(0, 0), 2, "a", "b"), smp(at(5, 0), 2, "c", "a")},
			Bin{Pickups: 1, Returns: 1, Coverage: 5.0 / 60, Observed: true, CensoredBelow: true, FromVehicles: true}},
		{"one jump is a truck", wide, []Sample{smp(at(0, 0), 10), smp(at(1, 0), 2), smp(at(60, 0), 3)},
			Bin{Returns: 1, MovedOut: 8, Coverage: 1, Observed: true, CensoredBelow: true, TruckRun: true}},
		{"a run of small steps is a truck", wide,
			[]Sample{smp(at(0, 0), 20), smp(at(0, 30), 17), smp(at(1, 0), 14), smp(at(1, 30), 11), smp(at(60, 0), 11)},
			Bin{MovedOut: 9, Coverage: 1, Observed: true, CensoredBelow: true, TruckRun: true}},
		{"detection off counts the truck", noTrucks,
			[]Sample{smp(at(0, 0), 20), smp(at(0, 30), 17), smp(at(1, 0), 14), smp(at(1, 30), 11), smp(at(60, 0), 11)},
			Bin{Pickups: 9, Coverage: 1, Observed: true}},
		{"steps broken by a still poll are riders", wide,
			[]Sample{smp(at(0, 0), 20), smp(at(0, 30), 18), smp(at(1, 0), 18), smp(at(1, 30), 16), smp(at(60, 0), 16)},
			Bin{Pickups: 4, Coverage: 1, Observed: true}},
		{"a run longer than the window splits", wide,
			[]Sample{smp(at(0, 0), 20), smp(at(3, 0), 18), smp(at(6, 0), 16), smp(at(60, 0), 16)},
			Bin{Pickups: 4, Coverage: 1, Observed: true}},
		{"gap is not attributed", DefaultConfig(), []Sample{smp(at(0, 0), 10), smp(at(20, 0), 5), smp(at(25, 0), 4)},
			Bin{Pickups: 1, Coverage: 5.0 / 60, Observed: true, CensoredBelow: true}},
		{"closed station: the operator's move", wide, []Sample{closedStart, closed},
			Bin{MovedOut: 5, Coverage: 0.5, Observed: true, CensoredBelow: true, Closed: true}},
		{"duplicate poll ignored", wide, []Sample{smp(at(0, 0), 3), smp(at(0, 0), 3), smp(at(60, 0), 1)},
			Bin{Pickups: 2, Observed: true, Coverage: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bins, _ := derive(t, tc.cfg, tc.samples)
			if len(bins) == 0 {
				t.Fatal("no bins")
			}
			got := bins[0]
			if !got.Start.Equal(t0) {
				t.Fatalf("first bin starts %v, want %v", got.Start, t0)
			}
			got.Station, got.Start, got.End, got.ExpectedHidden = "", time.Time{}, time.Time{}, 0
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDeriverUnobservedAndStraddle(t *testing.T) {
	bins, st := derive(t, DefaultConfig(), []Sample{smp(at(50, 0), 10), smp(at(55, 0), 10), smp(at(59, 0), 9), smp(at(61, 0), 7), smp(at(150, 0), 7)})
	if len(bins) != 2 || st.Gaps != 1 {
		t.Fatalf("%d bins (want 2: 10:00, 11:00; 12:00 ends after the lag), %d gaps (want 1)", len(bins), st.Gaps)
	}
	// The interval 10:59–11:01 is counted at 11:01 and covers a minute of
	// each bin; 11:01–12:30 is a gap.
	if b := bins[0]; b.Pickups != 1 || !b.Observed || math.Abs(b.Coverage-10.0/60) > 1e-12 || !b.CensoredBelow {
		t.Fatalf("10:00: %+v", b)
	}
	if b := bins[1]; b.Pickups != 2 || math.Abs(b.Coverage-1.0/60) > 1e-12 || !b.CensoredBelow {
		t.Fatalf("11:00: %+v", b)
	}
	d, _ := New(DefaultConfig())
	for _, s := range []Sample{smp(at(0, 0), 10), smp(at(200, 0), 7)} {
		if err := d.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	bins, _ = d.Advance(at(240, 0))
	if len(bins) != 3 || bins[1].Observed || bins[1].Pickups != 0 {
		t.Fatalf("a bin inside a gap must be unobserved: %+v", bins)
	}
}

func TestDeriverRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      Sample
		reason string
	}{
		{"no station", Sample{At: at(10, 0)}, ReasonStation},
		{"negative bikes", smp(at(10, 0), -1), ReasonCount},
		{"docks below -1", Sample{Station: "s", At: at(10, 0), Docks: -2}, ReasonCount},
		{"before origin", smp(time.Unix(-5, 0), 1), ReasonTime},
		{"out of order", smp(at(-1, 0), 1), ReasonOutOfOrder},
		{"conflict", smp(at(0, 0), 4), ReasonConflict},
		{"late", smp(at(5, 0), 4), ReasonLate},
		{"ids twice", smp(at(20, 0), 2, "a", "a"), ReasonVehicles},
		{"empty id", smp(at(20, 0), 1, ""), ReasonVehicles},
		{"ids without flag", Sample{Station: "s", At: at(20, 0), Vehicles: []string{"a"}}, ReasonVehicles},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := New(DefaultConfig())
			if err := d.Add(smp(at(0, 0), 3)); err != nil {
				t.Fatal(err)
			}
			if tc.reason == ReasonLate {
				if _, err := d.Advance(at(6, 0)); err != nil {
					t.Fatal(err)
				}
			}
			err := d.Add(tc.s)
			var se *SampleError
			if !errors.As(err, &se) || se.Reason != tc.reason {
				t.Fatalf("got %v, want reason %s", err, tc.reason)
			}
			if st := d.Stats(); st.Refused[tc.reason] != 1 || st.Samples != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestAdvanceBounds(t *testing.T) {
	d, _ := New(DefaultConfig())
	if err := d.Add(smp(at(0, 0), 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Advance(time.Date(2150, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Fatal("advancing 130 years at once must be refused")
	}
	if bins, err := d.Advance(at(-30, 0)); err != nil || bins != nil {
		t.Fatalf("advance before the station: %v %v", bins, err)
	}
	if bins, _ := d.Advance(at(5, 0)); len(bins) != 0 {
		t.Fatalf("no bin has ended: %+v", bins)
	}
}

// TestTruckRateAware: at a station whose riders take two bikes a minute,
// four bikes gone in two minutes are riders; fifteen in two minutes are
// a truck.
func TestTruckRateAware(t *testing.T) {
	for _, tc := range []struct {
		name  string
		burst int
		moved int
	}{{"riders", 4, 0}, {"truck", 15, 15}} {
		t.Run(tc.name, func(t *testing.T) {
			var samples []Sample
			bikes := 100
			for m := range 40 { // 40 minutes: one bike each 30 s leaves, one arrives
				samples = append(samples, smp(at(m, 0), bikes-1), smp(at(m, 30), bikes))
			}
			for i := range 4 { // the burst over two minutes
				bikes -= tc.burst / 4
				if i == 3 {
					bikes -= tc.burst % 4
				}
				samples = append(samples, smp(at(40, 30*(i+1)), bikes))
			}
			samples = append(samples, smp(at(45, 0), bikes))
			bins, _ := derive(t, DefaultConfig(), samples)
			if bins[0].MovedOut != tc.moved {
				t.Fatalf("moved %d, want %d: %+v", bins[0].MovedOut, tc.moved, bins[0])
			}
		})
	}
}
