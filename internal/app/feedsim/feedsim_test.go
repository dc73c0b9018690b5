package feedsim

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/gbfs"
)

// get fetches path from the handler at clock now.
func get(t *testing.T, s *Sim, now time.Time, path string) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler(func() time.Time { return now }).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://feed.test"+path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: HTTP %d", path, rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return b
}

// TestFeedReadsAsGBFS: the three files decode with the adapter's own
// decoders; every station is named, within its capacity, bikes and docks
// summing to it; the state changes between polls, drifts the way each
// station's rates say over ten minutes, and is the same for the same
// seed and clock.
func TestFeedReadsAsGBFS(t *testing.T) {
	start := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
	s, err := New(DefaultConfig(), start)
	if err != nil {
		t.Fatal(err)
	}
	d, err := gbfs.DecodeDiscovery(get(t, s, start, "/gbfs.json"), "en")
	if err != nil || d.Feeds[gbfs.FeedStationStatus] != "http://feed.test/station_status.json" {
		t.Fatalf("discovery %+v, %v", d, err)
	}
	info, err := gbfs.DecodeStationInformation(get(t, s, start, "/station_information.json"), "en")
	if err != nil || len(info.Stations) != 12 || len(info.Problems) != 0 {
		t.Fatalf("information: %d stations, %v, %v", len(info.Stations), info.Problems, err)
	}
	capacity := map[string]int{}
	for i, st := range info.Stations {
		if st.Name != Names[i] || st.Capacity < 15 || st.Capacity > 35 {
			t.Errorf("station %+v", st)
		}
		capacity[st.ID] = st.Capacity
	}
	bikesAt := func(s *Sim, at time.Time) map[string]int {
		st, err := gbfs.DecodeStationStatus(get(t, s, at, "/station_status.json"))
		if err != nil || len(st.Stations) != 12 || !st.LastUpdated.Equal(at) {
			t.Fatalf("status at %s: %d stations, updated %s, %v", at, len(st.Stations), st.LastUpdated, err)
		}
		out := map[string]int{}
		for _, x := range st.Stations {
			if x.BikesAvailable < 0 || x.BikesAvailable+x.DocksAvailable != capacity[x.ID] {
				t.Errorf("%s at %s: %d bikes, docks %v, capacity %d", x.ID, at, x.BikesAvailable, x.DocksAvailable, capacity[x.ID])
			}
			out[x.ID] = x.BikesAvailable
		}
		return out
	}
	first, later := bikesAt(s, start), bikesAt(s, start.Add(30*time.Second))
	changed := 0
	for id := range first {
		if first[id] != later[id] {
			changed++
		}
	}
	if changed < 6 {
		t.Errorf("%d of 12 stations changed in 30 s", changed)
	}
	end := bikesAt(s, start.Add(10*time.Minute))
	for i, st := range s.stations {
		if drain := st.PickupRate > st.ReturnRate; drain != (i%2 == 0) || (drain && end[st.ID] > first[st.ID]) || (!drain && end[st.ID] < first[st.ID]) {
			t.Errorf("station %s (draining %v): %d bikes, then %d after 10 min", st.ID, drain, first[st.ID], end[st.ID])
		}
	}
	again, err := New(DefaultConfig(), start)
	if err != nil {
		t.Fatal(err)
	}
	if b := bikesAt(again, start.Add(10*time.Minute)); len(b) != len(end) || func() bool {
		for id := range b {
			if b[id] != end[id] {
				return true
			}
		}
		return false
	}() {
		t.Errorf("same seed and clock: %v, then %v", end, b)
	}
}

func TestConfigRefused(t *testing.T) {
	for _, c := range []Config{{Stations: 0, Rate: 0.4}, {Stations: 17, Rate: 0.4}, {Stations: 3, Rate: 0}} {
		if _, err := New(c, time.Now()); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
