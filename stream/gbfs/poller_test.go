package gbfs

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

func intp(v int) *int { return &v }

func TestPollRecorded(t *testing.T) {
	u := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	for _, tc := range []struct {
		version  string
		wait     time.Duration
		want     []stationstatus.Sample
		outOfUse map[string]float64
	}{
		{"v2.3", time.Minute, []stationstatus.Sample{
			{Station: "116", Name: "W 17 St & 8 Ave", Capacity: intp(50), BikesAvailable: 20, DocksAvailable: intp(30), Installed: true, Renting: true, Returning: true, LastReported: u(1714982428)},
			{Station: "72", Name: "W 52 St & 11 Ave", Capacity: intp(55), BikesAvailable: 12, DocksAvailable: intp(41), BikesDisabled: 1, DocksDisabled: 1, Installed: true, Renting: true, Returning: true, LastReported: u(1714982410)},
			{Station: "79", Name: "Franklin St & W Broadway", Capacity: intp(33), BikesAvailable: 0, DocksAvailable: intp(32), BikesDisabled: 1, Installed: true, Renting: true, Returning: true, LastReported: u(1714982395)},
			{Station: "82", Name: "St James Pl & Pearl St", Capacity: intp(27), BikesAvailable: 27, DocksAvailable: intp(0), Installed: true, Renting: true, Returning: true, LastReported: u(1714982401)},
			{Station: "83", Name: "Atlantic Ave & Fort Greene Pl", Capacity: intp(62), BikesAvailable: 3, DocksAvailable: intp(59), Installed: true, LastReported: u(1714981800)},
		}, map[string]float64{ReasonNotRenting: 1, ReasonNotReturning: 1, ReasonNotInstalled: 0}},
		{"v3.0", 30 * time.Second, []stationstatus.Sample{
			{Station: "bcn:1", Name: "Gran Via Corts Catalanes, 760", Capacity: intp(46), BikesAvailable: 9, DocksAvailable: intp(33), BikesDisabled: 2, DocksDisabled: 2, Installed: true, Renting: true, Returning: true, LastReported: u(1714982412)},
			{Station: "bcn:2", Name: "Tetuan Square, 8", Capacity: intp(27), BikesAvailable: 0, DocksAvailable: intp(27), Installed: true, Renting: true, Returning: true, LastReported: u(1714982405)},
			{Station: "bcn:3", Name: "Ali Bei, 44", Capacity: intp(27), BikesAvailable: 27, DocksAvailable: intp(0), Installed: true, Renting: true, Returning: true, LastReported: u(1714982388).Add(250 * time.Millisecond)},
			{Station: "bcn:4", Name: "Ribes, 13", Capacity: intp(21), BikesAvailable: 4, DocksAvailable: intp(17), LastReported: u(1714981260)},
		}, map[string]float64{ReasonNotRenting: 1, ReasonNotReturning: 1, ReasonNotInstalled: 1}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			fs := newFeedServer(t)
			pub := &memPublisher{}
			p, _, met := newTestPoller(t, fs, tc.version, pub)
			if wait := p.Poll(context.Background()); wait != tc.wait {
				t.Errorf("wait %v after the poll, want the ttl %v", wait, tc.wait)
			}
			msgs := pub.decoded(t)
			if len(msgs) != 1 {
				t.Fatalf("%d messages, want 1", len(msgs))
			}
			m := msgs[0]
			if m.Feed != "testbikes" || !m.At.Equal(u(1714982430)) || pub.msgs[0].subject != "dcgp.status.testbikes" || pub.msgs[0].id != "testbikes/1714982430/0" {
				t.Fatalf("feed %q at %v on %q id %q", m.Feed, m.At, pub.msgs[0].subject, pub.msgs[0].id)
			}
			if !reflect.DeepEqual(m.Stations, tc.want) {
				t.Fatalf("stations\n%+v\nwant\n%+v", m.Stations, tc.want)
			}
			for reason, want := range tc.outOfUse {
				if got := counterValue(t, met.stations.WithLabelValues("testbikes", reason)); got != want {
					t.Errorf("%s counted %v, want %v", reason, got, want)
				}
			}
			// The same snapshot again publishes nothing.
			p.Poll(context.Background())
			if n := len(pub.decoded(t)); n != 1 {
				t.Fatalf("%d messages after an unchanged poll, want 1", n)
			}
			if got := counterValue(t, met.polls.WithLabelValues("testbikes", OutcomeUnchanged)); got != 1 {
				t.Fatalf("unchanged polls %v, want 1", got)
			}
		})
	}
}

// badStep is one poll of a bad-feed scenario.
type badStep struct {
	file    string        // served as station_status ("" = the recorded one)
	status  int           // HTTP status to answer instead
	delay   time.Duration // answer after this long
	clock   time.Time     // zero: unchanged
	pubErr  error         // the publisher fails
	outcome string
	// stations are the station ids the poll publishes (nil: none).
	stations []string
}

func TestPollBadFeeds(t *testing.T) {
	const path = "/v2.3/en/station_status.json"
	all := []string{"116", "72", "79", "82", "83"}
	later := time.Date(2024, 5, 6, 8, 3, 0, 0, time.UTC)
	recovered := badStep{file: "bad/recovered.json", clock: later, outcome: OutcomePublished, stations: all}
	for _, tc := range []struct {
		name  string
		steps []badStep
		// feedErrors and stationIssues are the counters expected after the
		// steps, by label (file/reason, reason).
		feedErrors    map[[2]string]float64
		stationIssues map[string]float64
	}{
		{"malformed JSON", []badStep{{file: "bad/malformed.json", outcome: OutcomeFailed}, recovered},
			map[[2]string]float64{{FeedStationStatus, ReasonMalformed}: 1}, nil},
		{"HTTP 500", []badStep{{status: 500, outcome: OutcomeFailed}, recovered},
			map[[2]string]float64{{FeedStationStatus, ReasonHTTPStatus}: 1}, nil},
		{"timeout", []badStep{{delay: 2 * time.Second, outcome: OutcomeFailed}, recovered},
			map[[2]string]float64{{FeedStationStatus, ReasonTimeout}: 1}, nil},
		{"stale last_updated", []badStep{{clock: time.Date(2024, 5, 6, 8, 6, 0, 0, time.UTC), outcome: OutcomeFailed}, recovered},
			map[[2]string]float64{{FeedStationStatus, ReasonStaleFeed}: 1}, nil},
		{"last_updated going back", []badStep{recovered, {outcome: OutcomeFailed}},
			map[[2]string]float64{{FeedStationStatus, ReasonStaleFeed}: 1}, nil},
		{"counts above capacity", []badStep{{file: "bad/over_capacity.json", outcome: OutcomePublished, stations: []string{"116", "79", "82", "83"}}, recovered},
			nil, map[string]float64{ReasonOverCapacity: 1}},
		{"a station vanishes and comes back", []badStep{{file: "bad/vanished.json", outcome: OutcomePublished, stations: []string{"72", "79", "82", "83"}}, recovered},
			nil, map[string]float64{ReasonVanished: 1}},
		{"stale last_reported", []badStep{{file: "bad/stale_report.json", outcome: OutcomePublished, stations: []string{"72", "79", "82", "83"}}, recovered},
			nil, map[string]float64{ReasonStaleReport: 1}},
		{"a station stops renting", []badStep{{file: "bad/not_renting.json", outcome: OutcomePublished, stations: all}, recovered},
			nil, map[string]float64{ReasonNotRenting: 2, ReasonNotReturning: 1}},
		{"a station listed twice, a bogus copy first", []badStep{{file: "bad/duplicate.json", outcome: OutcomePublished, stations: []string{"116", "79", "82", "83"}}, recovered},
			nil, map[string]float64{ReasonDuplicate: 1}},
		{"unreadable stations", []badStep{{file: "bad/bad_station.json", outcome: OutcomePublished, stations: []string{"116", "72", "83"}}, recovered},
			nil, map[string]float64{ReasonBadStation: 2}},
		{"publish fails, then the same snapshot is retried", []badStep{
			{file: "bad/over_capacity.json", pubErr: errors.New("nats: no responders"), outcome: OutcomePublishFailed},
			{file: "bad/over_capacity.json", outcome: OutcomePublished, stations: []string{"116", "79", "82", "83"}}, recovered},
			nil, map[string]float64{ReasonOverCapacity: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFeedServer(t)
			pub := &memPublisher{}
			p, clock, met := newTestPoller(t, fs, "v2.3", pub)
			// A good first poll, then the scenario.
			steps := append([]badStep{{outcome: OutcomePublished, stations: all}}, tc.steps...)
			for i, s := range steps {
				fs.set(path, s.file, s.status, s.delay)
				if !s.clock.IsZero() {
					clock.set(s.clock)
				}
				pub.mu.Lock()
				pub.fail = s.pubErr
				before := len(pub.msgs)
				pub.mu.Unlock()
				wait := p.Poll(context.Background())
				if got := counterValue(t, met.polls.WithLabelValues("testbikes", s.outcome)); got < 1 {
					t.Fatalf("step %d: no %s poll counted", i, s.outcome)
				}
				if s.outcome == OutcomeFailed && wait != p.cfg.MinInterval {
					t.Errorf("step %d: wait %v after a failed poll, want min-interval %v", i, wait, p.cfg.MinInterval)
				}
				msgs := pub.decoded(t)[before:]
				var ids []string
				for _, m := range msgs {
					for _, st := range m.Stations {
						ids = append(ids, st.Station)
					}
				}
				if !reflect.DeepEqual(ids, s.stations) {
					t.Fatalf("step %d: published stations %v, want %v", i, ids, s.stations)
				}
			}
			for k, want := range tc.feedErrors {
				if got := counterValue(t, met.errors.WithLabelValues("testbikes", k[0], k[1])); got != want {
					t.Errorf("feed errors %v: %v, want %v", k, got, want)
				}
			}
			for r, want := range tc.stationIssues {
				if got := counterValue(t, met.stations.WithLabelValues("testbikes", r)); got != want {
					t.Errorf("station issues %s: %v, want %v", r, got, want)
				}
			}
		})
	}
}

func TestPollRediscoversAfterHTTPError(t *testing.T) {
	fs := newFeedServer(t)
	p, _, _ := newTestPoller(t, fs, "v2.3", &memPublisher{})
	p.Poll(context.Background())
	fs.set("/v2.3/en/station_status.json", "", 404, 0)
	p.Poll(context.Background())
	before := fs.hitCount("/v2.3/gbfs.json")
	p.Poll(context.Background())
	if after := fs.hitCount("/v2.3/gbfs.json"); after != before+1 {
		t.Fatalf("gbfs.json read %d times after a 404 on station_status, want once", after-before)
	}
}

func TestPollKeepsStationInformationOnFailure(t *testing.T) {
	fs := newFeedServer(t)
	pub := &memPublisher{}
	p, clock, met := newTestPoller(t, fs, "v2.3", pub)
	p.Poll(context.Background())
	// Station information fails when next due; the capacities held are kept.
	fs.set("/v2.3/en/station_information.json", "", 503, 0)
	clock.set(time.Date(2024, 5, 6, 9, 2, 0, 0, time.UTC))
	fs.set("/v2.3/en/station_status.json", "bad/recovered.json", 0, 0)
	p.cfg.MaxFeedAge = 2 * time.Hour
	p.Poll(context.Background())
	msgs := pub.decoded(t)
	if len(msgs) != 2 || msgs[1].Stations[0].Capacity == nil || *msgs[1].Stations[0].Capacity != 50 {
		t.Fatalf("after a failed station_information refresh: %d messages, want 2 with capacities kept", len(msgs))
	}
	if got := counterValue(t, met.errors.WithLabelValues("testbikes", FeedStationInformation, ReasonHTTPStatus)); got != 1 {
		t.Fatalf("station_information errors %v, want 1", got)
	}
}

func TestPollSplitsLargeSnapshots(t *testing.T) {
	fs := newFeedServer(t)
	pub := &memPublisher{}
	p, _, _ := newTestPoller(t, fs, "v2.3", pub)
	p.cfg.StationsPerMessage = 2
	p.Poll(context.Background())
	msgs := pub.decoded(t)
	if len(msgs) != 3 || len(msgs[0].Stations) != 2 || len(msgs[2].Stations) != 1 {
		t.Fatalf("%d messages, want 3 of 2, 2 and 1 stations", len(msgs))
	}
	for i, m := range pub.msgs {
		if want := stationstatus.MsgID("testbikes", msgs[0].At, i); m.id != want {
			t.Errorf("message %d id %q, want %q", i, m.id, want)
		}
	}
}

func TestPollInterval(t *testing.T) {
	for _, tc := range []struct {
		ttl, want time.Duration
	}{{0, 10 * time.Second}, {5 * time.Second, 10 * time.Second}, {time.Minute, time.Minute}, {time.Hour, 5 * time.Minute}} {
		cfg := DefaultConfig()
		if got := min(max(tc.ttl, cfg.MinInterval), cfg.MaxInterval); got != tc.want {
			t.Errorf("ttl %v: interval %v, want %v", tc.ttl, got, tc.want)
		}
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	fs := newFeedServer(t)
	pub := &memPublisher{}
	p, _, _ := newTestPoller(t, fs, "v2.3", pub)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for len(pub.decoded(t)) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	if len(pub.decoded(t)) != 1 {
		t.Fatalf("%d messages, want 1", len(pub.decoded(t)))
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"no url", func(c *Config) { c.URL = "" }},
		{"relative url", func(c *Config) { c.URL = "gbfs.json" }},
		{"feed with a dot", func(c *Config) { c.Feed = "a.b" }},
		{"min above max", func(c *Config) { c.MinInterval = time.Hour }},
		{"zero timeout", func(c *Config) { c.Timeout = 0 }},
		{"too many stations per message", func(c *Config) { c.StationsPerMessage = 5000 }},
		{"negative max clock skew", func(c *Config) { c.MaxClockSkew = -time.Second }},
		{"zero warn interval", func(c *Config) { c.WarnInterval = 0 }},
		{"max backoff below min-interval", func(c *Config) { c.MaxBackoff = time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.URL, c.Feed = "https://gbfs.example/gbfs.json", "bikes"
			if err := c.Validate(); err != nil {
				t.Fatalf("the valid base config: %v", err)
			}
			tc.edit(&c)
			if err := c.Validate(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// counterValue reads a counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
