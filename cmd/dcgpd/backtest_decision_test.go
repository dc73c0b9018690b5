package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/internal/app/backtest"
)

// TestDecisionCountsFlag: --counts names the counts file the decision
// backtest reads instead of --citibike's counts_2018.csv. The folder
// here has only counts_2019.csv, holding no hour of station 72, so the
// run stops at reading it and the error says what the file lacked.
func TestDecisionCountsFlag(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"stations.csv":    "station,name,lat,lon,capacity\n72,W 52 St & 11 Av,40.767,-73.993,39\n",
		"counts_2019.csv": "time,station,pickups,dropoffs\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"backtest", "--decision", "--citibike", dir, "--counts", filepath.Join(dir, "counts_2019.csv"),
		"--config", "../../examples/citibike-hourly/model.toml", "--stations", "72", "--quiet"}, &out, &errOut)
	got := errOut.String()
	if code == 0 || !strings.Contains(got, "lack station 72") || strings.Contains(got, "counts_2018") {
		t.Fatalf("exit %d, stderr %q; want a failure saying counts_2019.csv lacks station 72", code, got)
	}
}

// TestWriteDecisionForecastScores: the decision backtest's output
// includes both flows' forecast scores on the span it decided on.
func TestWriteDecisionForecastScores(t *testing.T) {
	res := &backtest.DecisionResult{Policies: []string{"dcgpd", "hm-c1p1t3", "hindsight"}, StationDays: 1,
		UnmetPickups: []float64{1, 2, 0}, UnmetReturns: []float64{1, 2, 0},
		PickupsReport: &backtest.Report{Origins: 7, Methods: []string{"dcgpd"}, Horizons: []int{1}},
		ReturnsReport: &backtest.Report{Origins: 9, Methods: []string{"dcgpd"}, Horizons: []int{1}}}
	var b strings.Builder
	if err := writeDecision(&b, res, "c"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Pickups forecasts", "7 origins from", "Returns forecasts", "9 origins from"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
