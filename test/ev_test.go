package test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/internal/charging"
)

// evSites are the three sites the EV examples and the ACN-derived run
// group a garage's chargers into: 250–400 m apart in Pasadena, with pools
// of 3, 3 and 2 chargers.
func evSites() []charging.Site {
	return []charging.Site{
		{Name: "site-north", Lat: 34.1395, Lon: -118.1270, Pool: 3},
		{Name: "site-centre", Lat: 34.1377, Lon: -118.1253, Pool: 3},
		{Name: "site-east", Lat: 34.1366, Lon: -118.1226, Pool: 2},
	}
}

// evProtocol: a turned-away driver tries one other site with
// probability 0.6 (weights exp(−d²/(2·400²)), d in metres), else gives up.
var evProtocol = charging.Protocol{Divert: 0.6, Lengthscale: 400, Seed: 1}

// ev5minExample builds examples/ev-5min: two weeks of simulated sessions
// on 42 chargers (charging.DefaultSynthConfig, 14 days from Monday
// 2024-05-06, 30 weekday arrivals a day) grouped into evSites under evProtocol, in 5-minute bins.
func ev5minExample() (*charging.Table, error) {
	cfg := charging.DefaultSynthConfig()
	cfg.Days, cfg.PerDay = 14, 30
	ss, err := charging.Synthesize(cfg)
	if err != nil {
		return nil, err
	}
	n := charging.GroupChargers(charging.Chargers(ss), evSites())
	o, err := charging.Simulate(ss, n, evProtocol)
	if err != nil {
		return nil, err
	}
	return o.Bins(cfg.Start, 5*time.Minute, cfg.Days*288)
}

// TestEV5minExample checks that examples/ev-5min's data are what
// ev5minExample writes (DCGPD_UPDATE_EV=1 rewrites them).
func TestEV5minExample(t *testing.T) {
	tb, err := ev5minExample()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]func(*bytes.Buffer) error{
		"obs.csv":      func(b *bytes.Buffer) error { return tb.WriteObs(b) },
		"truth.csv":    func(b *bytes.Buffer) error { return tb.WriteTruth(b) },
		"products.csv": func(b *bytes.Buffer) error { return tb.WriteProducts(b) },
	}
	for name, write := range files {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "examples", "ev-5min", name)
		if os.Getenv("DCGPD_UPDATE_EV") == "1" {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b.Bytes()) {
			t.Errorf("%s is not what ev5minExample writes (DCGPD_UPDATE_EV=1 go test -run TestEV5minExample ./test/ rewrites it)", path)
		}
	}
	var arrivals, served, turned, lost, censored, cells int
	for _, row := range tb.Cells {
		for _, c := range row {
			arrivals += c.Arrivals
			served += c.Served
			turned += c.TurnedAway
			lost += c.Lost
			cells++
			if c.Censored {
				censored++
			}
		}
	}
	t.Logf("%d cells, %d censored (%.1f%%); %d arrivals, %d served, %d turned away, %d lost", cells, censored, 100*float64(censored)/float64(cells), arrivals, served, turned, lost)
}
