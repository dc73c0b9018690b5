package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTrips writes a trip-count CSV of stations over two days of hours
// (pickups with a daily cycle scaled per station, dropoffs one more) and
// a stations CSV listing them and more; it returns both paths.
func writeTrips(t *testing.T, dir string, stations []string, listed string) (trips, list string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("time,station,pickups,dropoffs\n")
	start := time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)
	for h := range 48 {
		at := start.Add(time.Duration(h) * time.Hour).Format(time.RFC3339)
		for k, s := range stations {
			p := (k + 1) * (1 + (h%24)/6)
			fmt.Fprintf(&b, "%s,%s,%d,%d\n", at, s, p, p+1)
		}
	}
	trips, list = filepath.Join(dir, "trips.csv"), filepath.Join(dir, "stations.csv")
	if err := os.WriteFile(trips, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(list, []byte(listed), 0o644); err != nil {
		t.Fatal(err)
	}
	return trips, list
}

const tripsStations = "station,name,lat,lon,capacity\n" +
	"a,\"1 Av & E 1 St\",40.720,-73.980,20\nb,B,40.725,-73.985,40\nc,C,40.730,-73.990,30\nd,New,40.735,-73.995,60\n"

// TestFitTrips: `fit --trips` fits on a trip-count export and saves a
// model with one prior-mean row per station; fitting that model on counts
// that add a new station gives it the pooled prior, by its capacity, and
// says so.
func TestFitTrips(t *testing.T) {
	dir := t.TempDir()
	trips, list := writeTrips(t, dir, []string{"a", "b", "c"}, tripsStations)
	cfg := filepath.Join(dir, "model.toml")
	if err := os.WriteFile(cfg, []byte("[model]\nlikelihood = \"tobit\"\n[[model.temporal]]\nkernel = \"matern32\"\n[model.mean]\nkind = \"periodic\"\nperiod = 24.0\nlevel = \"scale\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved, out := filepath.Join(dir, "fitted.toml"), filepath.Join(dir, "post.csv")
	if err := runFit(context.Background(), []string{"--trips", trips, "--flow", "dropoffs", "--stations", list, "--config", cfg, "--out", out, "--save-model", saved}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\"a\" = [", "\"b\" = [", "\"c\" = [", "stations.csv"} {
		if !bytes.Contains(text, []byte(want)) || bytes.Contains(text, []byte("\"d\" = [")) {
			t.Errorf("model file lacks %q, or has d:\n%s", want, text)
		}
	}
	post, err := readCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(post) != 1+48*3 {
		t.Errorf("%d posterior rows, want one per count", len(post)-1)
	}
	trips2, _ := writeTrips(t, dir, []string{"a", "b", "c", "d"}, tripsStations)
	var progress bytes.Buffer
	if err := runFit(context.Background(), []string{"--trips", trips2, "--stations", list, "--config", saved, "--out", out}, io.Discard, &progress); err != nil {
		t.Fatal(err)
	}
	if want := "prior mean: 1 products without a row of model.mean.values got the pooled prior mean (the weekly shape of 3 fitted rows; level by capacity 1"; !strings.Contains(progress.String(), want) {
		t.Errorf("progress lacks %q:\n%s", want, progress.String())
	}
}

// TestFitTripsErrors: wrong combinations are usage errors; a station the
// list lacks is named.
func TestFitTripsErrors(t *testing.T) {
	dir := t.TempDir()
	trips, list := writeTrips(t, dir, []string{"a", "zz"}, tripsStations)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trips", trips, "--obs", trips}, "usage"},
		{[]string{}, "usage"},
		{[]string{"--trips", trips, "--stations", list, "--products", list}, "usage"},
		{[]string{"--trips", trips, "--stations", list}, list + ": 1 stations of " + trips + " are not listed (first: zz)"},
		{[]string{"--trips", trips, "--flow", "returns"}, `flow "returns"`},
	} {
		err := runFit(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return csv.NewReader(f).ReadAll()
}
