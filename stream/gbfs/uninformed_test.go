package gbfs

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestPollUninformedStations: a station absent from station_information
// is skipped by default (counted each snapshot, logged with its id when
// the list changes, not again within WarnInterval) and published without
// capacity with PublishUninformed.
func TestPollUninformedStations(t *testing.T) {
	known := []string{"116", "72", "79", "82", "83"}
	for _, tc := range []struct {
		name    string
		publish bool
		want    []string // stations of each of the two snapshots with 999
	}{
		{"ignored by default", false, known},
		{"published when asked", true, []string{"116", "72", "79", "82", "83", "999"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFeedServer(t)
			pub := &memPublisher{}
			cfg := DefaultConfig()
			cfg.URL, cfg.Feed, cfg.Timeout = fs.URL+"/v2.3/gbfs.json", "testbikes", 200*time.Millisecond
			cfg.PublishUninformed = tc.publish
			clock := &fixedClock{t: time.Date(2024, 5, 6, 8, 2, 0, 0, time.UTC)}
			met := NewMetrics(nil)
			var logs bytes.Buffer
			p, err := NewPoller(cfg, pub, met, zerolog.New(&logs), WithClock(clock.now))
			if err != nil {
				t.Fatal(err)
			}
			for i, file := range []string{"bad/uninformed.json", "bad/uninformed_later.json"} {
				fs.set("/v2.3/en/station_status.json", file, 0, 0)
				clock.set(clock.now().Add(time.Minute))
				before := len(pub.decoded(t))
				p.Poll(context.Background())
				var ids []string
				for _, m := range pub.decoded(t)[before:] {
					for _, s := range m.Stations {
						ids = append(ids, s.Station)
						if s.Station == "999" && s.Capacity != nil {
							t.Errorf("999 published with capacity %d", *s.Capacity)
						}
					}
				}
				if !reflect.DeepEqual(ids, tc.want) {
					t.Fatalf("snapshot %d: stations %v, want %v", i, ids, tc.want)
				}
			}
			wantCount, wantLines := 2.0, 1 // each skip counted, logged once
			if tc.publish {
				wantCount = 1 // counted when the station enters the state
			}
			if got := counterValue(t, met.stations.WithLabelValues("testbikes", ReasonNoInformation)); got != wantCount {
				t.Errorf("no_information counted %v, want %v", got, wantCount)
			}
			var lines []string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, `"reason":"no_information"`) {
					lines = append(lines, l)
				}
			}
			if len(lines) != wantLines || !strings.Contains(lines[0], "999") {
				t.Errorf("no_information logged %d times, want %d naming 999:\n%s", len(lines), wantLines, strings.Join(lines, "\n"))
			}
		})
	}
}
