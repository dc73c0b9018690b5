package gbfs

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// TestPollPublishFailures: a status message the daemon does not store is
// a publish failure, not a feed failure: logged as such (naming the
// subject and dcgpd serve when no stream stores it), counted apart, and
// the snapshot stays pending until it is stored.
func TestPollPublishFailures(t *testing.T) {
	all := []string{"116", "72", "79", "82", "83"}
	for _, tc := range []struct {
		name    string
		err     error
		reason  string
		message string // in the warning
	}{
		{"no stream (dcgpd serve not started)", fmt.Errorf("publishing x: %w", jetstream.ErrNoStreamResponse), PublishNoStream,
			"no JetStream stream stores subject dcgp.status.testbikes: is dcgpd serve running?"},
		{"no responders", nats.ErrNoResponders, PublishNoStream, "is dcgpd serve running?"},
		{"timeout", fmt.Errorf("publishing x: %w", context.DeadlineExceeded), PublishTimeout, "no acknowledgement"},
		{"connection closed", nats.ErrConnectionClosed, PublishNATS, "nats: connection closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFeedServer(t)
			pub := &memPublisher{fail: tc.err}
			cfg := DefaultConfig()
			cfg.URL, cfg.Feed, cfg.Timeout = fs.URL+"/v2.3/gbfs.json", "testbikes", 200*time.Millisecond
			clock := &fixedClock{t: time.Date(2024, 5, 6, 8, 1, 0, 0, time.UTC)}
			met := NewMetrics(nil)
			var logs bytes.Buffer
			p, err := NewPoller(cfg, pub, met, zerolog.New(&logs), WithClock(clock.now))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if wait := p.Poll(context.Background()); wait != time.Minute {
					t.Errorf("poll %d: wait %v, want the ttl (the feed is fine)", i, wait)
				}
				clock.set(clock.now().Add(10 * time.Second))
			}
			if got := counterValue(t, met.polls.WithLabelValues("testbikes", OutcomePublishFailed)); got != 2 {
				t.Errorf("%s polls %v, want 2", OutcomePublishFailed, got)
			}
			if got := counterValue(t, met.polls.WithLabelValues("testbikes", OutcomeFailed)); got != 0 {
				t.Errorf("%s polls %v, want 0: the feed is fine", OutcomeFailed, got)
			}
			if got := counterValue(t, met.errors.WithLabelValues("testbikes", FeedStationStatus, "publish")); got != 0 {
				t.Errorf("feed errors (station_status, publish) %v, want 0: the feed is fine", got)
			}
			if got := counterValue(t, met.publishErrors.WithLabelValues("testbikes", tc.reason)); got != 2 {
				t.Errorf("publish errors %s: %v, want 2", tc.reason, got)
			}
			out, n := logs.String(), 0
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, `"level":"warn"`) && strings.Contains(l, tc.message) {
					n++
				}
			}
			if n != 1 || strings.Contains(out, "feed unusable") {
				t.Errorf("the warning %q logged %d times, want once, and no feed blamed:\n%s", tc.message, n, out)
			}
			// The daemon is up: the pending snapshot is stored.
			pub.mu.Lock()
			pub.fail = nil
			pub.mu.Unlock()
			p.Poll(context.Background())
			msgs := pub.decoded(t)
			if len(msgs) != 1 || len(msgs[0].Stations) != len(all) || !msgs[0].At.Equal(time.Date(2024, 5, 6, 8, 0, 30, 0, time.UTC)) {
				t.Fatalf("%d messages after the publisher recovered, want the pending snapshot", len(msgs))
			}
			if !strings.Contains(logs.String(), "gbfs status stored again") {
				t.Errorf("no line when publishing recovered:\n%s", logs.String())
			}
		})
	}
}

// TestPollPendingSuperseded: a snapshot not stored when a newer one
// arrives is counted and logged as superseded, and the newer one is
// stored.
func TestPollPendingSuperseded(t *testing.T) {
	fs := newFeedServer(t)
	pub := &memPublisher{fail: jetstream.ErrNoStreamResponse}
	p, clock, met := newTestPoller(t, fs, "v2.3", pub)
	p.Poll(context.Background())
	fs.set("/v2.3/en/station_status.json", "bad/recovered.json", 0, 0)
	clock.set(time.Date(2024, 5, 6, 8, 3, 0, 0, time.UTC))
	pub.mu.Lock()
	pub.fail = nil
	pub.mu.Unlock()
	p.Poll(context.Background())
	if got := counterValue(t, met.superseded.WithLabelValues("testbikes")); got != 1 {
		t.Errorf("superseded %v, want 1", got)
	}
	if msgs := pub.decoded(t); len(msgs) != 1 || !msgs[0].At.Equal(time.Unix(1714982550, 0)) {
		t.Fatalf("%d messages, want the newer snapshot only", len(msgs))
	}
}
