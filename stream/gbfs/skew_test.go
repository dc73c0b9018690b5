package gbfs

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// skewStep is one poll of a clock-skew scenario.
type skewStep struct {
	file  string    // served as station_status ("" = the recorded one)
	clock time.Time // the poller's clock
	// at is the time of the message published (zero: nothing published).
	at time.Time
	// reported caps every published last_reported (zero: unchecked).
	reported time.Time
}

// TestPollFutureLastUpdated: a last_updated more than MaxClockSkew ahead
// of the poller's clock is published stamped at the poller's clock,
// counted, and does not make later snapshots "go back".
func TestPollFutureLastUpdated(t *testing.T) {
	const path = "/v2.3/en/station_status.json"
	at := func(h, m, s int) time.Time { return time.Date(2024, 5, 6, h, m, s, 0, time.UTC) }
	for _, tc := range []struct {
		name   string
		steps  []skewStep
		skewed float64 // dcgpd_gbfs_clock_skew_total after the steps
	}{
		{"a stamp an hour ahead, then the right time again", []skewStep{
			{clock: at(8, 1, 0), at: at(8, 0, 30)},
			{file: "bad/future.json", clock: at(8, 2, 0), at: at(8, 2, 0)},
			{file: "bad/future.json", clock: at(8, 2, 10)}, // the same snapshot: unchanged
			{file: "bad/recovered.json", clock: at(8, 3, 0), at: at(8, 2, 30)},
		}, 1},
		{"a stamp ahead within the skew", []skewStep{
			{clock: at(7, 57, 0), at: at(8, 0, 30)},
		}, 0},
		{"the publisher's clock an hour ahead", []skewStep{
			{clock: at(8, 1, 0), at: at(8, 0, 30)},
			{file: "bad/clock_ahead.json", clock: at(8, 3, 0), at: at(8, 3, 0), reported: at(8, 3, 0)},
			{file: "bad/clock_ahead.json", clock: at(8, 3, 10)},
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFeedServer(t)
			pub := &memPublisher{}
			p, clock, met := newTestPoller(t, fs, "v2.3", pub)
			for i, s := range tc.steps {
				fs.set(path, s.file, 0, 0)
				clock.set(s.clock)
				before := len(pub.decoded(t))
				p.Poll(context.Background())
				msgs := pub.decoded(t)[before:]
				if s.at.IsZero() {
					if len(msgs) != 0 {
						t.Fatalf("step %d: %d messages, want none", i, len(msgs))
					}
					continue
				}
				if len(msgs) != 1 || !msgs[0].At.Equal(s.at) {
					var got []time.Time
					for _, m := range msgs {
						got = append(got, m.At)
					}
					t.Fatalf("step %d: messages at %v, want one at %v", i, got, s.at)
				}
				var ids []string
				for _, st := range msgs[0].Stations {
					ids = append(ids, st.Station)
					if !s.reported.IsZero() && st.LastReported.After(s.reported) {
						t.Errorf("step %d: station %s last_reported %v after %v", i, st.Station, st.LastReported, s.reported)
					}
				}
				if want := []string{"116", "72", "79", "82", "83"}; !reflect.DeepEqual(ids, want) {
					t.Fatalf("step %d: stations %v, want %v", i, ids, want)
				}
			}
			if got := counterValue(t, met.skewed.WithLabelValues("testbikes")); got != tc.skewed {
				t.Errorf("clock skew counted %v, want %v", got, tc.skewed)
			}
		})
	}
}
