package daemon

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
)

// TestWaitingFor: until the first ranking, an entry says what it waits
// for, at each stage, with the feed's URL and the times it can state.
func TestWaitingFor(t *testing.T) {
	cfg, err := config.DecodeConfig([]byte(feedTestConfig))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	rc := &d.cfg.Rebalance[0]
	fs := &feedSource{rc: rc}
	if got, want := d.RiskIndex()[0].Waiting, "waiting for station_information from https://example.com/gbfs.json (the stations become the models' products)"; got != want {
		t.Errorf("before the feed is prepared: %q, want %q", got, want)
	}
	d.feeds = append(d.feeds, fs)
	fs.stationsErr = "station_information.json: GET …: HTTP 503"
	if got, want := d.startingViews()[0].Waiting, "waiting for station_information from https://example.com/gbfs.json (the stations become the models' products); last attempt: station_information.json: GET …: HTTP 503"; got != want {
		t.Errorf("stations not read: %q, want %q", got, want)
	}
	fs.stations, fs.lag = 6, 3*time.Second
	origin := time.Unix(0, 0).UTC()
	if got, want := d.waitingFor(rc, nil, origin, 5*time.Second), "waiting for the first station_status from https://example.com/gbfs.json (6 stations served)"; got != want {
		t.Errorf("no status: %q, want %q", got, want)
	}
	fs.firstStatus = time.Date(2026, 11, 28, 17, 41, 12, 0, time.UTC)
	want := "first bin closes at 17:41:15 UTC; its pickups and returns are derived from the polls by about 17:41:18 UTC (flow lag 3 s), then the ranking"
	if got := d.waitingFor(rc, nil, origin, 5*time.Second); got != want {
		t.Errorf("first status: %q, want %q", got, want)
	}
	fs.lag = 10 * time.Minute
	want = "first bin closes at 18:00:00 UTC; its pickups and returns are derived from the polls by about 18:10:00 UTC (flow lag 10 min), then the ranking"
	if got := d.waitingFor(rc, nil, origin, time.Hour); got != want {
		t.Errorf("hourly: %q, want %q", got, want)
	}
}

// TestWaitingForStatusFromElsewhere: an entry fed by `dcgpd gbfs` names
// the subject it waits on, then the models' input.
func TestWaitingForStatusFromElsewhere(t *testing.T) {
	f := newViewFixture(t)
	cfg, err := config.DecodeConfig([]byte(feedTestConfig))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.waitingFor(&f.rc, f.job, time.Unix(0, 0), time.Hour), "waiting for station status on dcgp.status.city (`dcgpd gbfs --url …/gbfs.json --feed city` publishes it)"; got != want {
		t.Errorf("no status: %q, want %q", got, want)
	}
	f.status(f.t0.Add(30 * time.Minute))
	if got, want := d.waitingFor(&f.rc, f.job, time.Unix(0, 0), time.Hour), "status received (newest 08:30:00 UTC); waiting for both models to close a bin: pickups on dcgp.obs.pickups and returns on dcgp.obs.returns"; got != want {
		t.Errorf("status: %q, want %q", got, want)
	}
}

const feedTestConfig = `
[nats]
listen = "127.0.0.1:-1"
[[models]]
name = "pickups"
bin = "5s"
[[models]]
name = "returns"
bin = "5s"
[[rebalance]]
name = "demo"
pickups = "pickups"
returns = "returns"
gbfs_url = "https://example.com/gbfs.json"
`
