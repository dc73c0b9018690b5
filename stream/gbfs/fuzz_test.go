package gbfs

import (
	"errors"
	"os"
	"testing"
)

// The seed corpora are in testdata/fuzz/<FuzzName>; the recorded feeds
// are added here too.

func FuzzDecodeDiscovery(f *testing.F) {
	for _, name := range []string{"v2.3/gbfs.json", "v3.0/gbfs.json"} {
		f.Add(readFuzzSeed(f, name), "en")
	}
	f.Fuzz(func(t *testing.T, data []byte, language string) {
		d, err := DecodeDiscovery(data, language)
		if err != nil {
			return
		}
		if d.Feeds[FeedStationStatus] == "" || d.TTL < 0 || d.LastUpdated.Year() < 1970 {
			t.Fatalf("accepted a discovery without station_status or with a bad header: %+v", d)
		}
	})
}

func FuzzDecodeStationInformation(f *testing.F) {
	for _, name := range []string{"v2.3/en/station_information.json", "v3.0/station_information.json"} {
		f.Add(readFuzzSeed(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		si, err := DecodeStationInformation(data, "en")
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, s := range si.Stations {
			if s.ID == "" || seen[s.ID] || s.Capacity < -1 || s.Lat < -90 || s.Lat > 90 || s.Lon < -180 || s.Lon > 180 {
				t.Fatalf("accepted a bad station: %+v", s)
			}
			seen[s.ID] = true
		}
		checkDuplicates(t, seen, si.Problems)
	})
}

func FuzzDecodeStationStatus(f *testing.F) {
	for _, name := range []string{"v2.3/en/station_status.json", "v3.0/station_status.json", "bad/bad_station.json", "bad/malformed.json", "bad/duplicate.json"} {
		f.Add(readFuzzSeed(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := DecodeStationStatus(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, s := range st.Stations {
			if s.ID == "" || seen[s.ID] || s.BikesAvailable < 0 || s.DocksAvailable < -1 || s.BikesDisabled < 0 || s.DocksDisabled < 0 || s.LastReported.Year() < 1970 {
				t.Fatalf("accepted a bad station: %+v", s)
			}
			seen[s.ID] = true
		}
		checkDuplicates(t, seen, st.Problems)
	})
}

// checkDuplicates fails when a station refused as listed more than once
// was also kept.
func checkDuplicates(t *testing.T, kept map[string]bool, problems []StationProblem) {
	t.Helper()
	for _, p := range problems {
		if errors.Is(p.Err, ErrDuplicateStation) && kept[p.Station] {
			t.Fatalf("station %s refused as a duplicate and kept", p.Station)
		}
	}
}

func readFuzzSeed(f *testing.F, name string) []byte {
	f.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		f.Fatal(err)
	}
	return data
}
