package evsupply

import (
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream/ocpi"
)

var t0 = time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)

func at(min float64) time.Time { return t0.Add(time.Duration(min * float64(time.Minute))) }

func status(site, evse string, s ocpi.Status, min float64) *ocpi.StatusMessage {
	return &ocpi.StatusMessage{Schema: 1, Kind: ocpi.KindStatus, Model: "ev", Site: site, EVSE: evse, Status: string(s), At: at(min)}
}

func poll(min float64) *ocpi.StatusMessage {
	return &ocpi.StatusMessage{Schema: 1, Kind: ocpi.KindPoll, Model: "ev", At: at(min)}
}

// tracked is site a (EVSEs a1, a2, both available since 07:00) with
// a1 charging 08:01-08:04 and a2 from 08:02 on; polls every minute from
// 07:55 to 08:10 and from 08:19 to 08:25 (none 08:10-08:19).
func tracked(t *testing.T) *Tracker {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Model, cfg.MaxPollGap, cfg.CensorFraction = "ev", 2*time.Minute, 0.3
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tr := NewTracker(cfg, []string{"a", "b"})
	msgs := []*ocpi.StatusMessage{status("a", "a1", ocpi.StatusAvailable, -60), status("a", "a2", ocpi.StatusAvailable, -60),
		status("a", "a1", ocpi.StatusCharging, 1), status("a", "a2", ocpi.StatusCharging, 2), status("a", "a1", ocpi.StatusAvailable, 4),
		status("z", "z1", ocpi.StatusCharging, 1)}
	want := []string{OutcomeKept, OutcomeKept, OutcomeKept, OutcomeKept, OutcomeKept, OutcomeIgnored}
	for m := -5; m <= 25; m++ {
		if m <= 10 || m >= 19 {
			msgs, want = append(msgs, poll(float64(m))), append(want, OutcomePoll)
		}
	}
	for i, m := range msgs {
		if got := tr.Ingest(m); got != want[i] {
			t.Fatalf("message %d (%+v): %s, want %s", i, m, got, want[i])
		}
	}
	return tr
}

func TestTrackerSupply(t *testing.T) {
	tr := tracked(t)
	cases := []struct {
		name       string
		site       string
		start, end float64
		want       Bin
	}{
		{"full 08:02-08:04; a1 freed in the bin", "a", 0, 5, Bin{Known: true, Coverage: 1, Full: 0.4, Supply: 3}},
		{"one available throughout", "a", 5, 10, Bin{Known: true, Coverage: 1, Supply: 1}},
		{"polls cover 08:10 and 08:17-08:20: 3 of 10 minutes", "a", 10, 20, Bin{Coverage: 0.3, Supply: 1}},
		{"polls again", "a", 20, 25, Bin{Known: true, Coverage: 1, Supply: 1}},
		{"a site without status", "b", 0, 5, Bin{}},
		{"an unknown site", "z", 0, 5, Bin{}},
	}
	for _, c := range cases {
		got := tr.Supply(c.site, at(c.start), at(c.end))
		if got.Known != c.want.Known || got.Supply != c.want.Supply || math.Abs(got.Coverage-c.want.Coverage) > 1e-12 || math.Abs(got.Full-c.want.Full) > 1e-12 {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestTrackerCensor(t *testing.T) {
	tr := tracked(t)
	inf := math.Inf(1)
	cases := []struct {
		name       string
		start, end float64
		in, want   cvi.Obs
		res        CensorResult
	}{
		{"full part of the bin, two served: censored at 2", 0, 5, cvi.Obs{Y: 2, Supply: inf}, cvi.Obs{Y: 2, Supply: 2, Censored: true}, CensorResult{Censored: 1}},
		{"full, nobody served: no observation, supply 0", 0, 5, cvi.Obs{Y: 0, Supply: inf}, cvi.Obs{Y: math.NaN(), Supply: 0}, CensorResult{Emptied: 1}},
		{"full 2 of 10 minutes, not above censor_fraction 0.3: the status's supply", 0, 10, cvi.Obs{Y: 1, Supply: inf}, cvi.Obs{Y: 1, Supply: 3}, CensorResult{Uncensored: 1}},
		{"chargers to spare: the status's supply", 5, 10, cvi.Obs{Y: 0, Supply: inf}, cvi.Obs{Y: 0, Supply: 1}, CensorResult{Uncensored: 1}},
		{"more served than the status's supply: supply at the count", 5, 10, cvi.Obs{Y: 2, Supply: inf}, cvi.Obs{Y: 2, Supply: 2}, CensorResult{Uncensored: 1}},
		{"sender's censoring kept", 5, 10, cvi.Obs{Y: 1, Supply: 1, Censored: true}, cvi.Obs{Y: 1, Supply: 1, Censored: true}, CensorResult{Uncensored: 1}},
		{"polls covered too little: as sent", 10, 20, cvi.Obs{Y: 1, Supply: inf}, cvi.Obs{Y: 1, Supply: inf}, CensorResult{Unknown: 1}},
		{"no observation: left alone", 0, 5, cvi.Obs{Y: math.NaN(), Supply: inf}, cvi.Obs{Y: math.NaN(), Supply: inf}, CensorResult{}},
	}
	for _, c := range cases {
		obs := []cvi.Obs{c.in}
		res := tr.Censor([]string{"a"}, obs, at(c.start), at(c.end))
		got := obs[0]
		same := (got.Y == c.want.Y || math.IsNaN(got.Y) && math.IsNaN(c.want.Y)) && got.Supply == c.want.Supply && got.Censored == c.want.Censored
		if !same || res != c.res {
			t.Errorf("%s: %+v (%+v), want %+v (%+v)", c.name, got, res, c.want, c.res)
		}
	}
}

// TestTrackerRetention: statuses and polls older than the retention are
// dropped but the last one before it, whose state still holds.
func TestTrackerRetention(t *testing.T) {
	tr := tracked(t)
	late := 5 * 60.0 // 13:00, retention 3 h
	for m := late - 3; m <= late+5; m++ {
		tr.Ingest(poll(m))
	}
	if n := len(tr.sites["a"]["a1"]); n != 1 {
		t.Errorf("a1 keeps %d statuses, want 1 (the last, of 08:04)", n)
	}
	if got := tr.Supply("a", at(late), at(late+5)); !got.Known || got.Supply != 1 || got.Full != 0 {
		t.Errorf("13:00: %+v, want known, supply 1 (a1 available since 08:04, a2 charging since 08:02)", got)
	}
	if first := tr.polls[0]; !first.Equal(at(25)) {
		t.Errorf("oldest poll kept %v, want 08:25 (the last before 10:05, 3 h before the newest)", first)
	}
}

func TestConfigValidate(t *testing.T) {
	for i, f := range []func(*Config){
		func(c *Config) { c.Model = "" },
		func(c *Config) { c.CensorFraction = 1 },
		func(c *Config) { c.CensorFraction = -0.1 },
		func(c *Config) { c.CensorFraction = math.NaN() },
		func(c *Config) { c.MinCoverage = 0 },
		func(c *Config) { c.MaxPollGap = 0 },
		func(c *Config) { c.Retention = time.Minute },
	} {
		c := DefaultConfig()
		c.Model = "ev"
		f(&c)
		if c.Validate() == nil {
			t.Errorf("case %d: accepted %+v", i, c)
		}
	}
}
