package ocpi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

const testToken = "ebf3b399-779f-4497-9b9d-ac6ad3cc44d2"

// fakePublisher records what it was given; fail makes it refuse.
type fakePublisher struct {
	mu      sync.Mutex
	batches []Batch
	fail    bool
}

func (f *fakePublisher) Publish(_ context.Context, b Batch) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("broker unavailable")
	}
	f.batches = append(f.batches, b)
	return nil
}

func (f *fakePublisher) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, b := range f.batches {
		n += len(b.Changed) + len(b.Refreshed)
	}
	return n
}

// server serves recorded responses by scenario.
type server struct {
	mu       sync.Mutex
	scenario string
	t        *testing.T
}

func (s *server) set(sc string) {
	s.mu.Lock()
	s.scenario = sc
	s.mu.Unlock()
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	sc := s.scenario
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Token "+base64.StdEncoding.EncodeToString([]byte(testToken)) {
		http.Error(w, `{"status_code":2000,"status_message":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	file := func(name string) {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			s.t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}
	offset := r.URL.Query().Get("offset")
	switch sc {
	case "pages", "total-mismatch":
		total := "3"
		if sc == "total-mismatch" {
			total = "5"
		}
		w.Header().Set("X-Total-Count", total)
		w.Header().Set("X-Limit", "2")
		if offset == "" || offset == "0" {
			w.Header().Set("Link", fmt.Sprintf(`<http://%s/ocpi/2.2.1/locations?offset=2&limit=2>; rel="next"`, r.Host))
			file("locations_page1.json")
			return
		}
		file("locations_page2.json")
	case "loop":
		w.Header().Set("Link", `<locations?offset=0&limit=2>; rel="next"`)
		file("locations_page2.json")
	case "500":
		http.Error(w, "internal error", http.StatusInternalServerError)
	case "timeout":
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	default:
		w.Header().Set("X-Total-Count", "1")
		file(sc)
	}
}

func newTestPoller(t *testing.T, url string, pub Publisher, now time.Time) (*Poller, *Metrics) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.URL, cfg.Token, cfg.Timeout, cfg.Limit, cfg.MaxPages = url+"/ocpi/2.2.1/locations", testToken, 200*time.Millisecond, 2, 5
	m := NewMetrics(prometheus.NewRegistry())
	p, err := NewPoller(cfg, pub, zerolog.Nop(), m)
	if err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return now }
	return p, m
}

// TestPollerRecordedAndBad runs one poller through recorded good pages
// and every kind of bad response, in order: each bad one is refused with
// its reason and counted, publishes nothing, and leaves the next good
// poll to publish exactly what changed.
func TestPollerRecordedAndBad(t *testing.T) {
	srv := &server{t: t}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	pub := &fakePublisher{}
	p, m := newTestPoller(t, hs.URL, pub, time.Date(2024, 5, 6, 8, 10, 0, 0, time.UTC))
	steps := []struct {
		scenario  string
		reason    string // "" = ok
		published int
		problems  []string
	}{
		{scenario: "pages", published: 10},
		{scenario: "pages", published: 0},
		{scenario: "500", reason: ReasonHTTPStatus},
		{scenario: "malformed.json", reason: ReasonMalformed},
		{scenario: "ocpi_error.json", reason: ReasonOCPIStatus},
		{scenario: "timeout", reason: ReasonTimeout},
		{scenario: "stale_response.json", reason: ReasonStaleResp},
		{scenario: "loop", reason: ReasonPagination},
		{scenario: "total-mismatch", reason: ReasonPagination},
		// N-2 changed; FREE, the EVSE without uid and N-4 (an hour in the future) refused.
		{scenario: "unknown_status.json", published: 1, problems: []string{ReasonUnknownStatus, ReasonNoUID, ReasonFuture}},
		// N-1 at 07:00 is older than its 08:02 status already published.
		{scenario: "stale_evse.json", published: 1, problems: []string{ReasonStale}},
	}
	want := map[string]float64{}
	total := 0
	for i, st := range steps {
		srv.set(st.scenario)
		res, err := p.Poll(context.Background())
		var pe *PollError
		switch {
		case st.reason == "" && err != nil:
			t.Fatalf("step %d (%s): %v", i, st.scenario, err)
		case st.reason != "" && (!errors.As(err, &pe) || pe.Reason != st.reason):
			t.Fatalf("step %d (%s): error %v, want reason %s", i, st.scenario, err, st.reason)
		}
		if st.reason != "" {
			want[st.reason]++
			t.Logf("step %d (%s): %v", i, st.scenario, err)
		} else {
			want[OutcomeOK]++
		}
		total += st.published
		if res.Published != st.published || pub.count() != total {
			t.Fatalf("step %d (%s): published %d (in all %d), want %d (%d)", i, st.scenario, res.Published, pub.count(), st.published, total)
		}
		if len(res.Problems) != len(st.problems) {
			t.Fatalf("step %d (%s): problems %v, want %v", i, st.scenario, res.Problems, st.problems)
		}
		for j, pr := range res.Problems {
			if pr.Reason != st.problems[j] {
				t.Errorf("step %d (%s): problem %d is %v, want %s", i, st.scenario, j, pr, st.problems[j])
			}
		}
	}
	// Every successful poll, with changes or not, marked its time.
	if len(pub.batches) != int(want[OutcomeOK]) {
		t.Errorf("%d batches for %v successful polls", len(pub.batches), want[OutcomeOK])
	}
	for reason, n := range want {
		if got := counterValue(t, m.polls.WithLabelValues(reason)); got != n {
			t.Errorf("dcgpd_ocpi_polls_total{outcome=%q} = %v, want %v", reason, got, n)
		}
	}
	for _, reason := range []string{ReasonUnknownStatus, ReasonNoUID, ReasonFuture, ReasonStale} {
		if got := counterValue(t, m.refused.WithLabelValues(reason)); got != 1 {
			t.Errorf("dcgpd_ocpi_evse_refused_total{reason=%q} = %v, want 1", reason, got)
		}
	}
	// The published statuses turn into supply: at 08:05 site-north has
	// N-2 available of three (N-1 charging, N-3 blocked).
	var north []StatusEvent
	for _, s := range pub.batches[0].Changed {
		if s.Site == "site-north" {
			north = append(north, s)
		}
	}
	sup, err := SupplyFromStatus(north, time.Date(2024, 5, 6, 8, 5, 0, 0, time.UTC), 5*time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sup[0].Supply != 1 || sup[0].Censored() {
		t.Errorf("site-north's supply from the recorded page: %+v, want 1 available, not censored", sup[0])
	}
}

// TestPollerRefresh: an unchanged status is published again once Refresh
// has passed since it was last published, and only then.
func TestPollerRefresh(t *testing.T) {
	srv := &server{t: t, scenario: "pages"}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	pub := &fakePublisher{}
	now := time.Date(2024, 5, 6, 8, 10, 0, 0, time.UTC)
	p, _ := newTestPoller(t, hs.URL, pub, now)
	p.cfg.MaxAge = 0 // the recorded pages are of 08:05
	for i, step := range []struct {
		after              time.Duration
		changed, refreshed int
	}{{0, 10, 0}, {time.Minute, 0, 0}, {p.cfg.Refresh - time.Second, 0, 0}, {p.cfg.Refresh, 0, 10}, {p.cfg.Refresh + time.Minute, 0, 0}} {
		at := now.Add(step.after)
		p.now = func() time.Time { return at }
		if _, err := p.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		b := pub.batches[len(pub.batches)-1]
		if len(b.Changed) != step.changed || len(b.Refreshed) != step.refreshed || !b.Polled.Equal(at) {
			t.Errorf("poll %d at +%v: %d changed, %d refreshed, polled %v; want %d, %d, %v", i, step.after, len(b.Changed), len(b.Refreshed), b.Polled, step.changed, step.refreshed, at)
		}
	}
}

// TestPollerPublishFailureLosesNothing: statuses a publisher refused are
// offered again at the next poll.
func TestPollerPublishFailureLosesNothing(t *testing.T) {
	srv := &server{t: t, scenario: "pages"}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	pub := &fakePublisher{fail: true}
	p, m := newTestPoller(t, hs.URL, pub, time.Date(2024, 5, 6, 8, 10, 0, 0, time.UTC))
	if _, err := p.Poll(context.Background()); err == nil {
		t.Fatal("a refused publication was not an error")
	}
	pub.fail = false
	res, err := p.Poll(context.Background())
	if err != nil || res.Published != 10 {
		t.Fatalf("after the publisher recovered: published %d, err %v; want all 10", res.Published, err)
	}
	if got := counterValue(t, m.polls.WithLabelValues(ReasonPublish)); got != 1 {
		t.Errorf("publish failures counted %v, want 1", got)
	}
}

// TestPollerRunKeepsGoing: Run survives failing polls and publishes once
// the endpoint recovers, and stops when its context ends.
func TestPollerRunKeepsGoing(t *testing.T) {
	srv := &server{t: t, scenario: "500"}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	pub := &fakePublisher{}
	p, m := newTestPoller(t, hs.URL, pub, time.Date(2024, 5, 6, 8, 10, 0, 0, time.UTC))
	p.cfg.Interval = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for counterValue(t, m.polls.WithLabelValues(ReasonHTTPStatus)) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no failing polls")
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.set("pages")
	for pub.count() < 10 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not publish after the endpoint recovered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.URL = "" },
		func(c *Config) { c.URL = "ftp://x/locations" },
		func(c *Config) { c.Interval = 0 },
		func(c *Config) { c.MaxPages = 0 },
		func(c *Config) { c.Limit = -1 },
		func(c *Config) { c.Refresh = -time.Second },
	}
	for i, f := range bad {
		c := DefaultConfig()
		c.URL = "https://cpo.example/ocpi/2.2.1/locations"
		f(&c)
		if c.Validate() == nil {
			t.Errorf("case %d: accepted %+v", i, c)
		}
	}
}

// counterValue reads a counter through a registry of its own (the
// client's dto types stay unnamed).
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathering a counter: %v (%d families)", err, len(mfs))
	}
	return mfs[0].GetMetric()[0].GetCounter().GetValue()
}

// TestPollerResponseClock: with ResponseClock each poll's time is its
// response's timestamp, however old against the poller's clock (no
// max_age); a response without one fails the poll as malformed, one not
// after the last poll's as stale_response, and the next good one is
// taken.
func TestPollerResponseClock(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "locations_page2.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stamp any
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Error(err)
		}
		mu.Lock()
		m["timestamp"] = stamp
		mu.Unlock()
		if stamp == nil {
			delete(m, "timestamp")
		}
		w.Header().Set("X-Total-Count", "1")
		_ = json.NewEncoder(w).Encode(m)
	}))
	defer hs.Close()
	pub := &fakePublisher{}
	wall := time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC)
	p, m := newTestPoller(t, hs.URL, pub, wall)
	p.cfg.ResponseClock, p.cfg.Limit = true, 0
	virtual := time.Date(2024, 5, 6, 8, 6, 0, 0, time.UTC)
	for i, step := range []struct {
		stamp  any
		reason string // "" = taken, polled at the stamp
	}{
		{virtual.Format(time.RFC3339), ""},
		{virtual.Format(time.RFC3339), ReasonStaleResp},
		{nil, ReasonMalformed},
		{virtual.Add(-time.Minute).Format(time.RFC3339), ReasonStaleResp},
		{virtual.Add(time.Minute).Format(time.RFC3339), ""},
	} {
		mu.Lock()
		stamp = step.stamp
		mu.Unlock()
		n := len(pub.batches)
		_, err := p.Poll(context.Background())
		var pe *PollError
		switch {
		case step.reason == "" && err != nil:
			t.Errorf("step %d: %v", i, err)
		case step.reason != "" && (!errors.As(err, &pe) || pe.Reason != step.reason):
			t.Errorf("step %d: error %v, want reason %s", i, err, step.reason)
		}
		if step.reason == "" && err == nil {
			if got := pub.batches[n].Polled; got.Format(time.RFC3339) != step.stamp {
				t.Errorf("step %d: polled at %v, want the response's %v", i, got, step.stamp)
			}
		}
	}
	if got := counterValue(t, m.polls.WithLabelValues(ReasonStaleResp)); got != 2 {
		t.Errorf("stale responses counted %v, want 2", got)
	}
}
