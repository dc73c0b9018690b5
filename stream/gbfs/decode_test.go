package gbfs

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDecodeDiscovery(t *testing.T) {
	const base = "https://gbfs.example"
	v23 := strings.ReplaceAll(string(readTestdata(t, "v2.3/gbfs.json")), "{{BASE}}", base)
	v30 := strings.ReplaceAll(string(readTestdata(t, "v3.0/gbfs.json")), "{{BASE}}", base)
	for _, tc := range []struct {
		name, data, language string
		wantLang, wantStatus string
		wantUpdated          time.Time
		wantTTL              time.Duration
		wantErr              string
	}{
		{name: "v2.3 en", data: v23, language: "en", wantLang: "en", wantStatus: base + "/v2.3/en/station_status.json",
			wantUpdated: time.Unix(1714982430, 0).UTC(), wantTTL: time.Minute},
		{name: "v2.3 es", data: v23, language: "es", wantLang: "es", wantStatus: base + "/v2.3/es/station_status.json",
			wantUpdated: time.Unix(1714982430, 0).UTC(), wantTTL: time.Minute},
		{name: "v2.3 unknown language falls back to the first", data: v23, language: "fr", wantLang: "en",
			wantStatus: base + "/v2.3/en/station_status.json", wantUpdated: time.Unix(1714982430, 0).UTC(), wantTTL: time.Minute},
		{name: "v3.0", data: v30, language: "en", wantStatus: base + "/v3.0/station_status.json",
			wantUpdated: time.Date(2024, 5, 6, 8, 0, 30, 0, time.UTC), wantTTL: time.Minute},
		{name: "malformed", data: `{"last_updated": 1, "ttl": 0, "data": {`, wantErr: "malformed JSON"},
		{name: "no last_updated", data: `{"ttl": 0, "data": {"feeds": []}}`, wantErr: "last_updated missing"},
		{name: "millisecond last_updated", data: `{"last_updated": 1714982430000, "ttl": 0, "data": {"feeds": []}}`, wantErr: "not POSIX seconds"},
		{name: "negative ttl", data: `{"last_updated": 1714982430, "ttl": -5, "data": {"feeds": []}}`, wantErr: "ttl"},
		{name: "no station_status", data: `{"last_updated": 1714982430, "ttl": 0, "data": {"feeds": [{"name": "station_information", "url": "http://x/si.json"}]}}`,
			wantErr: "no station_status feed"},
		{name: "relative url", data: `{"last_updated": 1714982430, "ttl": 0, "data": {"feeds": [{"name": "station_status", "url": "ss.json"}]}}`,
			wantErr: "not an absolute http(s) URL"},
		{name: "no languages", data: `{"last_updated": 1714982430, "ttl": 0, "data": {}}`, wantErr: "no language"},
		{name: "data not an object", data: `{"last_updated": 1714982430, "ttl": 0, "data": [1]}`, wantErr: "neither data.feeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := DecodeDiscovery([]byte(tc.data), tc.language)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Language != tc.wantLang || d.Feeds[FeedStationStatus] != tc.wantStatus || !d.LastUpdated.Equal(tc.wantUpdated) || d.TTL != tc.wantTTL {
				t.Fatalf("got language %q, station_status %q, last_updated %v, ttl %v; want %q, %q, %v, %v",
					d.Language, d.Feeds[FeedStationStatus], d.LastUpdated, d.TTL, tc.wantLang, tc.wantStatus, tc.wantUpdated, tc.wantTTL)
			}
		})
	}
}

func TestDecodeStationInformation(t *testing.T) {
	for _, tc := range []struct {
		file, language string
		want           []StationInfo
	}{
		{"v2.3/en/station_information.json", "en", []StationInfo{
			{ID: "72", Name: "W 52 St & 11 Ave", Lat: 40.76727216, Lon: -73.99392888, Capacity: 55},
			{ID: "79", Name: "Franklin St & W Broadway", Lat: 40.71911552, Lon: -74.00666661, Capacity: 33},
			{ID: "82", Name: "St James Pl & Pearl St", Lat: 40.71117416, Lon: -74.00016545, Capacity: 27},
			{ID: "83", Name: "Atlantic Ave & Fort Greene Pl", Lat: 40.68382604, Lon: -73.97632328, Capacity: 62},
			{ID: "116", Name: "W 17 St & 8 Ave", Lat: 40.74177603, Lon: -74.00149746, Capacity: 50},
		}},
		{"v3.0/station_information.json", "en", []StationInfo{
			{ID: "bcn:1", Name: "Gran Via Corts Catalanes, 760", Lat: 41.3979779, Lon: 2.1801069, Capacity: 46},
			{ID: "bcn:2", Name: "Tetuan Square, 8", Lat: 41.3954877, Lon: 2.1771985, Capacity: 27},
			{ID: "bcn:3", Name: "Ali Bei, 44", Lat: 41.3941557, Lon: 2.1813305, Capacity: 27},
			{ID: "bcn:4", Name: "Ribes, 13", Lat: 41.3933173, Lon: 2.1812483, Capacity: 21},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			si, err := DecodeStationInformation(readTestdata(t, tc.file), tc.language)
			if err != nil {
				t.Fatal(err)
			}
			if len(si.Problems) != 0 || !reflect.DeepEqual(si.Stations, tc.want) {
				t.Fatalf("got %+v (problems %v), want %+v", si.Stations, si.Problems, tc.want)
			}
		})
	}
}

func TestDecodeStationInformationProblems(t *testing.T) {
	data := `{"last_updated": 1714982400, "ttl": 3600, "data": {"stations": [
		{"station_id": "a", "name": "A", "lat": 40.7, "lon": -74.0, "capacity": 10},
		{"name": "no id", "lat": 40.7, "lon": -74.0},
		{"station_id": "b", "name": "B", "lat": 95, "lon": -74.0},
		{"station_id": "c", "name": "C", "lat": 40.7, "lon": -74.0, "capacity": -3},
		{"station_id": "a", "name": "A again", "lat": 40.7, "lon": -74.0},
		{"station_id": 17, "name": [], "lat": 40.7, "lon": -74.0}]}}`
	si, err := DecodeStationInformation([]byte(data), "en")
	if err != nil {
		t.Fatal(err)
	}
	if len(si.Stations) != 0 {
		t.Fatalf("stations %+v, want none (a is listed twice)", si.Stations)
	}
	want := []string{"station #1: station_id missing", "station b: lat and lon", "station c: capacity", "station 17: name: empty localized array", "station a: listed 2 times (entries #0, #4)"}
	if len(si.Problems) != len(want) {
		t.Fatalf("problems %v, want %d", si.Problems, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(si.Problems[i].Error(), w) {
			t.Errorf("problem %d: %q, want it to start %q", i, si.Problems[i].Error(), w)
		}
	}
}

func TestDecodeStationStatus(t *testing.T) {
	u := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	for _, tc := range []struct {
		file    string
		updated time.Time
		ttl     time.Duration
		want    []StationStatus
	}{
		{"v2.3/en/station_status.json", u(1714982430), time.Minute, []StationStatus{
			{ID: "72", BikesAvailable: 12, DocksAvailable: 41, BikesDisabled: 1, DocksDisabled: 1, IsInstalled: true, IsRenting: true, IsReturning: true, LastReported: u(1714982410)},
			{ID: "79", BikesAvailable: 0, DocksAvailable: 32, BikesDisabled: 1, IsInstalled: true, IsRenting: true, IsReturning: true, LastReported: u(1714982395)},
			{ID: "82", BikesAvailable: 27, DocksAvailable: 0, IsInstalled: true, IsRenting: true, IsReturning: true, LastReported: u(1714982401)},
			{ID: "83", BikesAvailable: 3, DocksAvailable: 59, IsInstalled: true, LastReported: u(1714981800)},
			{ID: "116", BikesAvailable: 20, DocksAvailable: 30, IsInstalled: true, IsRenting: true, IsReturning: true, LastReported: u(1714982428)},
		}},
		{"v3.0/station_status.json", u(1714982430), 30 * time.Second, []StationStatus{
			{ID: "bcn:1", BikesAvailable: 9, DocksAvailable: 33, BikesDisabled: 2, DocksDisabled: 2, IsInstalled: true, IsRenting: true, IsReturning: true, LastReported: u(1714982412)},
			{ID: "bcn:2", BikesAvailable: 0, DocksAvailable: 27, IsInstalled: true, IsRenting: true, IsReturning: true, LastReported: u(1714982405)},
			{ID: "bcn:3", BikesAvailable: 27, DocksAvailable: 0, IsInstalled: true, IsRenting: true, IsReturning: true, LastReported: u(1714982388).Add(250 * time.Millisecond)},
			{ID: "bcn:4", BikesAvailable: 4, DocksAvailable: 17, LastReported: u(1714981260)},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := DecodeStationStatus(readTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !f.LastUpdated.Equal(tc.updated) || f.TTL != tc.ttl {
				t.Fatalf("last_updated %v ttl %v, want %v %v", f.LastUpdated, f.TTL, tc.updated, tc.ttl)
			}
			if len(f.Problems) != 0 || !reflect.DeepEqual(f.Stations, tc.want) {
				t.Fatalf("got %+v (problems %v), want %+v", f.Stations, f.Problems, tc.want)
			}
		})
	}
}

func TestDecodeStationStatusProblems(t *testing.T) {
	data := `{"last_updated": "2024-05-06T08:00:30Z", "ttl": 0, "data": {"stations": [
		{"station_id": "ok", "num_bikes_available": 2, "num_docks_available": 3, "is_installed": 1, "is_renting": 1, "is_returning": 0, "last_reported": 1714982400},
		{"station_id": "nocount", "num_docks_available": 3, "is_installed": true, "is_renting": true, "is_returning": true, "last_reported": 1714982400},
		{"station_id": "negative", "num_bikes_available": -1, "num_docks_available": 3, "is_installed": true, "is_renting": true, "is_returning": true, "last_reported": 1714982400},
		{"station_id": "fraction", "num_bikes_available": 1.5, "is_installed": true, "is_renting": true, "is_returning": true, "last_reported": 1714982400},
		{"station_id": "disagree", "num_bikes_available": 1, "num_vehicles_available": 2, "is_installed": true, "is_renting": true, "is_returning": true, "last_reported": 1714982400},
		{"station_id": "badbool", "num_bikes_available": 1, "is_installed": "yes", "is_renting": true, "is_returning": true, "last_reported": 1714982400},
		{"station_id": "norenting", "num_bikes_available": 1, "is_installed": true, "is_returning": true, "last_reported": 1714982400},
		{"station_id": "badtime", "num_bikes_available": 1, "is_installed": true, "is_renting": true, "is_returning": true, "last_reported": "yesterday"},
		{"station_id": "notime", "num_bikes_available": 1, "is_installed": true, "is_renting": true, "is_returning": true},
		"not an object"]}}`
	f, err := DecodeStationStatus([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := StationStatus{ID: "ok", BikesAvailable: 2, DocksAvailable: 3, IsInstalled: true, IsRenting: true, LastReported: time.Unix(1714982400, 0).UTC()}
	if len(f.Stations) != 1 || f.Stations[0] != want {
		t.Fatalf("stations %+v, want only %+v", f.Stations, want)
	}
	wantProblems := []string{
		"station nocount: num_bikes_available (2.3) or num_vehicles_available (3.0) missing",
		"station negative: num_bikes_available: -1 is not a count",
		"station fraction: num_bikes_available: 1.5 is not a count",
		"station disagree: num_bikes_available 1 and num_vehicles_available 2 disagree",
		"station badbool: is_installed: \"yes\" is not a boolean",
		"station norenting: is_renting missing",
		"station badtime: last_reported: \"yesterday\" is not an RFC 3339 time",
		"station notime: last_reported missing",
		"station #9: json: cannot unmarshal",
	}
	if len(f.Problems) != len(wantProblems) {
		t.Fatalf("problems %v, want %d", f.Problems, len(wantProblems))
	}
	for i, w := range wantProblems {
		if !strings.HasPrefix(f.Problems[i].Error(), w) {
			t.Errorf("problem %d: %q, want it to start %q", i, f.Problems[i].Error(), w)
		}
	}
}

func TestDecodeStationStatusFileErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"truncated", string(readTestdata(t, "bad/malformed.json")), "malformed JSON"},
		{"no stations", `{"last_updated": 1714982430, "ttl": 0, "data": {}}`, "data.stations missing"},
		{"no data", `{"last_updated": 1714982430, "ttl": 0}`, "data missing"},
		{"html", `<html>502 Bad Gateway</html>`, "malformed JSON"},
		{"bad last_updated", `{"last_updated": "May 6", "ttl": 0, "data": {"stations": []}}`, "not an RFC 3339 time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeStationStatus([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestDecodeDuplicateStations: a station_id listed more than once is
// refused in every copy (which copy is true cannot be told), as one
// problem; the other stations are kept.
func TestDecodeDuplicateStations(t *testing.T) {
	status := func(id string, bikes int) string {
		return fmt.Sprintf(`{"station_id": %q, "num_bikes_available": %d, "is_installed": true, "is_renting": true, "is_returning": true, "last_reported": 1714982400}`, id, bikes)
	}
	info := func(id string, capacity int) string {
		return fmt.Sprintf(`{"station_id": %q, "name": "N", "lat": 40.7, "lon": -74.0, "capacity": %d}`, id, capacity)
	}
	file := func(stations ...string) []byte {
		return []byte(`{"last_updated": 1714982430, "ttl": 0, "data": {"stations": [` + strings.Join(stations, ",") + `]}}`)
	}
	for _, tc := range []struct {
		name   string
		decode func() ([]string, []StationProblem, error)
		want   []string
		// problems are the texts the duplicate problems start with.
		problems []string
	}{
		{"status: a bogus first copy", func() ([]string, []StationProblem, error) {
			f, err := DecodeStationStatus(file(status("a", 0), status("b", 1), status("a", 7)))
			return statusIDs(f.Stations), f.Problems, err
		}, []string{"b"}, []string{"station a: listed 2 times"}},
		{"status: three copies and an unreadable one", func() ([]string, []StationProblem, error) {
			f, err := DecodeStationStatus(file(status("a", 1), status("a", 1), `{"station_id": "a", "num_bikes_available": -1}`, status("c", 2)))
			return statusIDs(f.Stations), f.Problems, err
		}, []string{"c"}, []string{"station a: num_bikes_available", "station a: listed 3 times"}},
		{"information: a bogus first copy", func() ([]string, []StationProblem, error) {
			f, err := DecodeStationInformation(file(info("a", 1), info("a", 30), info("b", 20)), "en")
			var ids []string
			for _, s := range f.Stations {
				ids = append(ids, s.ID)
			}
			return ids, f.Problems, err
		}, []string{"b"}, []string{"station a: listed 2 times"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, problems, err := tc.decode()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids, tc.want) {
				t.Fatalf("stations %v, want %v (problems %v)", ids, tc.want, problems)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems %v, want %d", problems, len(tc.problems))
			}
			for i, w := range tc.problems {
				if !strings.HasPrefix(problems[i].Error(), w) {
					t.Errorf("problem %d: %q, want it to start %q", i, problems[i].Error(), w)
				}
			}
			if last := problems[len(problems)-1]; !errors.Is(last.Err, ErrDuplicateStation) {
				t.Errorf("problem %q is not ErrDuplicateStation", last.Error())
			}
		})
	}
}

func statusIDs(list []StationStatus) []string {
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	return ids
}
