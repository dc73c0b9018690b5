package synth

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// citiBikeDir is the shared data directory, relative to this package.
const citiBikeDir = "../../../../shared/data/citibike"

func loadPaperBike(t *testing.T, hubs int) *BikeCounts {
	t.Helper()
	if _, err := os.Stat(filepath.Join(citiBikeDir, citiBikeCounts)); errors.Is(err, fs.ErrNotExist) {
		t.Skip("../shared/data/citibike absent: the Citi Bike counts are not in the repository; see their PROVENANCE.md")
	}
	q, err := PaperBikeQuery(hubs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadCitiBike(citiBikeDir, q)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBikePaperConfig(t *testing.T) {
	c := loadPaperBike(t, 4)
	if len(c.Pickups) != 1465 || len(c.Stations) != 4 {
		t.Fatalf("window %d hours × %d stations, want 1465 × 4", len(c.Pickups), len(c.Stations))
	}
	cfg, err := PaperBikeConfig(4, 123)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Bike(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Train.Len() != 1026 || d.Test.Len() != 439 {
		t.Fatalf("split %d/%d, want 1026/439", d.Train.Len(), d.Test.Len())
	}
	checkCapped(t, &d.Train)
	checkCapped(t, &d.Test)
	// Pair structure of the paper's T: 0↔1 and 2↔3.
	for i, j := range []int{1, 0, 3, 2} {
		if d.Transfer[i][j] < 1-1e-9 {
			t.Fatalf("T[%d][%d] = %v, want ≈ 1 (T = %v)", i, j, d.Transfer[i][j], d.Transfer)
		}
	}
	t.Logf("hubs %q at %v m", d.Products, d.Features)
	// Supply: integer, ≥ 0, redrawn at midnight within the hub's range.
	for _, s := range []*Split{&d.Train, &d.Test} {
		for r, i := range s.Index {
			for k, u := range s.Supply[r] {
				if u != float64(int(u)) || u < 0 {
					t.Fatalf("supply %v not a non-negative integer", u)
				}
				if i%24 == 0 && (u < cfg.SupplyLow[k] || u > cfg.SupplyHigh[k]) {
					t.Fatalf("midnight supply %v outside [%v, %v]", u, cfg.SupplyLow[k], cfg.SupplyHigh[k])
				}
				if s.Censored[r][k] != (s.TrueY[r][k] > u) {
					t.Fatal("censoring flag is not pickups > supply")
				}
			}
		}
	}
	all := append(d.Train.CensoredFraction(), d.Test.CensoredFraction()...)
	t.Logf("bike-4 censored fractions train %.3f test %.3f (paper, other stations: .205 .034 .091 .020)", all[:4], all[4:])
	checkDeterministic(t, func(seed uint64) (*Dataset, error) {
		cfg.Seed = seed
		return Bike(c, cfg)
	})
}

func TestBikeTwoHubs(t *testing.T) {
	c := loadPaperBike(t, 2)
	cfg, err := PaperBikeConfig(2, 123)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Bike(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.Transfer[0][1] != 1 || d.Transfer[1][0] != 1 {
		t.Fatalf("2-hub T = %v, want [[0,1],[1,0]]", d.Transfer)
	}
	checkIncomingCapped(t, &d.Train, d.Transfer)
	t.Logf("bike-2 censored fractions train %.3f", d.Train.CensoredFraction())
}

// checkIncomingCapped: before the cap each hub receives its partner's
// excess; the observed total never exceeds supply.
func checkIncomingCapped(t *testing.T, s *Split, tr [][]float64) {
	t.Helper()
	for i := range s.TrueY {
		for k := range s.TrueY[i] {
			in := 0.0
			for j := range s.TrueY[i] {
				in += max(s.TrueY[i][j]-s.Supply[i][j], 0) * tr[j][k]
			}
			want := min(min(s.TrueY[i][k], s.Supply[i][k])+in, s.Supply[i][k])
			if !near(s.Obs[i][k], want, 1e-12) {
				t.Fatalf("row %d hub %d: obs %v want %v", i, k, s.Obs[i][k], want)
			}
		}
	}
}

func TestReadCitiBikeErrors(t *testing.T) {
	q := BikeQuery{Stations: []int{1}, Start: time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2018, 1, 1, 2, 0, 0, 0, time.UTC)}
	if _, err := ReadCitiBike(t.TempDir(), q); err == nil || !strings.Contains(err.Error(), "synth: citibike") {
		t.Fatalf("missing files: err = %v", err)
	}
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(citiBikeStations, "station,name,lat,lon,capacity\n1,A,40.7,-74.0,10\n2,B,40.71,-74.0,10\n")
	write(citiBikeCounts, "time,station,pickups\n")
	if _, err := ReadCitiBike(dir, q); err == nil || !strings.Contains(err.Error(), "header") {
		t.Fatalf("bad header: err = %v", err)
	}
	good := "time,station,pickups,dropoffs\n2018-01-01T00:00,1,3,0\n2018-01-01T00:00,2,1,1\n2018-01-01T01:00,1,0,2\n2018-01-01T02:00,1,4,1\n"
	write(citiBikeCounts, good)
	c, err := ReadCitiBike(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pickups) != 3 || c.Pickups[2][0] != 4 || c.Dropoffs[1][0] != 2 || c.Stations[0].Name != "A" {
		t.Fatalf("parsed %+v", c)
	}
	q2 := q
	q2.Stations = []int{1, 2}
	if _, err := ReadCitiBike(dir, q2); err == nil || !strings.Contains(err.Error(), "lack station 2") {
		t.Fatalf("missing hour: err = %v", err)
	}
	q3 := q
	q3.Stations = []int{9}
	if _, err := ReadCitiBike(dir, q3); err == nil || !strings.Contains(err.Error(), "not in") {
		t.Fatalf("unknown station: err = %v", err)
	}
	write(citiBikeCounts, good+"2018-01-01T02:00,1,x,1\n")
	if _, err := ReadCitiBike(dir, q); err == nil || !strings.Contains(err.Error(), "line 6") {
		t.Fatalf("bad count: err = %v", err)
	}
	write(citiBikeCounts, good+"2018-01-01T02:00,1,4,1\n")
	if _, err := ReadCitiBike(dir, q); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate: err = %v", err)
	}
}

func TestDailySupply(t *testing.T) {
	// Starting at 22:00: redraw at steps 0 and 2 (midnight); balance otherwise.
	pick := []float64{5, 1, 0, 50}
	drop := []float64{2, 0, 0, 0}
	r := newRNG(1, streamSupply)
	s := dailySupply(r, pick, drop, 22, 10, 10)
	want := []float64{10, 7, 10, 10}
	for i := range want {
		if s[i] != want[i] {
			t.Fatalf("supply %v, want %v", s, want)
		}
	}
	s = dailySupply(r, []float64{3.5, 9, 0}, []float64{0, 0, 0}, 5, 4.75, 4.75)
	if s[0] != 4 || s[1] != 1 || s[2] != 0 {
		t.Fatalf("truncated supply %v, want [4 1 0] (float recursion 4.75, 1.25, 0)", s)
	}
}
