package gbfs

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

const statusPath = "/v2.3/en/station_status.json"

// newBackoffPoller is a poller on fs's 2.3 feed with a settable clock, a
// fixed jitter of 0.5 and its log in a buffer.
func newBackoffPoller(t *testing.T, fs *feedServer) (*Poller, *fixedClock, *bytes.Buffer) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.URL, cfg.Feed, cfg.Timeout = fs.URL+"/v2.3/gbfs.json", "testbikes", 200*time.Millisecond
	cfg.MaxFeedAge = 24 * time.Hour // the recorded snapshot stays usable all the test
	clock := &fixedClock{t: time.Date(2024, 5, 6, 8, 1, 0, 0, time.UTC)}
	var logs bytes.Buffer
	p, err := NewPoller(cfg, &memPublisher{}, NewMetrics(nil), zerolog.New(&logs),
		WithClock(clock.now), WithJitter(func() float64 { return 0.5 }))
	if err != nil {
		t.Fatal(err)
	}
	return p, clock, &logs
}

// TestPollBackoff: failed polls wait longer each time (doubling from
// MinInterval, half of it jittered, up to MaxBackoff), at least the
// Retry-After the server gave (seconds or an HTTP date, at most
// MaxBackoff), and back to the ttl once the feed answers.
func TestPollBackoff(t *testing.T) {
	type step struct {
		status     int    // 0: the recorded feed
		retryAfter string // Retry-After header
		want       time.Duration
	}
	ok := step{want: time.Minute} // the recorded ttl
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"doubling to the cap, reset on recovery", []step{
			{status: 503, want: 10 * time.Second}, {status: 503, want: 15 * time.Second}, {status: 500, want: 30 * time.Second},
			{status: 503, want: time.Minute}, {status: 503, want: 2 * time.Minute}, {status: 503, want: 4 * time.Minute},
			{status: 503, want: 8 * time.Minute}, {status: 503, want: 675 * time.Second}, {status: 503, want: 675 * time.Second},
			ok, {status: 503, want: 10 * time.Second}}},
		{"Retry-After in seconds on 503", []step{{status: 503, retryAfter: "120", want: 2 * time.Minute}, ok}},
		{"Retry-After in seconds on 429", []step{{status: 429, retryAfter: "45", want: 45 * time.Second}, ok}},
		{"Retry-After as an HTTP date", []step{{status: 503, retryAfter: "Mon, 06 May 2024 08:06:00 GMT", want: 5 * time.Minute}, ok}},
		{"Retry-After shorter than the backoff", []step{{status: 503, want: 10 * time.Second}, {status: 503, want: 15 * time.Second},
			{status: 503, retryAfter: "1", want: 30 * time.Second}}},
		{"Retry-After bounded by MaxBackoff", []step{{status: 503, retryAfter: "86400", want: 15 * time.Minute}}},
		{"Retry-After unreadable", []step{{status: 503, retryAfter: "soon", want: 10 * time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFeedServer(t)
			p, _, _ := newBackoffPoller(t, fs)
			for i, s := range tc.steps {
				fs.set(statusPath, "", s.status, 0)
				fs.setHeader(statusPath, "Retry-After", s.retryAfter)
				if got := p.Poll(context.Background()); got != s.want {
					t.Fatalf("step %d: wait %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

// TestPollOutageLogsSparingly: an hour's outage at a 10 s interval makes
// a handful of requests, one warning when it starts, at most one per
// WarnInterval while it lasts and one line when the feed is back.
func TestPollOutageLogsSparingly(t *testing.T) {
	fs := newFeedServer(t)
	p, clock, logs := newBackoffPoller(t, fs)
	fs.set(statusPath, "", http.StatusServiceUnavailable, 0)
	start := clock.now()
	polls := 0
	for clock.now().Sub(start) < time.Hour {
		wait := p.Poll(context.Background())
		polls++
		clock.set(clock.now().Add(wait))
	}
	fs.set(statusPath, "", 0, 0)
	p.Poll(context.Background())
	warnings := strings.Count(logs.String(), `"level":"warn"`)
	t.Logf("an hour's outage: %d requests, %d warnings", polls, warnings)
	if polls > 15 {
		t.Errorf("%d requests in an hour's outage, want at most 15", polls)
	}
	if limit := 1 + int(time.Hour/p.cfg.WarnInterval); warnings > limit || warnings < 2 {
		t.Errorf("%d warnings in an hour's outage, want 2..%d:\n%s", warnings, limit, logs.String())
	}
	if !strings.Contains(logs.String(), "gbfs feed usable again") {
		t.Errorf("no line on recovery:\n%s", logs.String())
	}
	if hits := fs.hitCount(statusPath); hits != polls+1 {
		t.Errorf("station_status read %d times, want %d", hits, polls+1)
	}
}
