package stationstatus

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const good = `{"schema": 1, "feed": "citibike", "at": "2024-05-06T08:00:30Z", "stations": [
 {"station": "72", "name": "W 52 St & 11 Av", "capacity": 55, "bikes_available": 12, "docks_available": 41, "bikes_disabled": 1, "docks_disabled": 1,
  "is_installed": true, "is_renting": true, "is_returning": true, "last_reported": "2024-05-06T08:00:10Z"},
 {"station": "dockless", "bikes_available": 3, "is_installed": true, "is_renting": false, "is_returning": true,
  "last_reported": "2024-05-06T08:01:10Z"}]}`

func TestDecode(t *testing.T) {
	m, err := Decode([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	c, d := 55, 41
	want := &Message{Schema: 1, Feed: "citibike", At: time.Date(2024, 5, 6, 8, 0, 30, 0, time.UTC), Stations: []Sample{
		{Station: "72", Name: "W 52 St & 11 Av", Capacity: &c, BikesAvailable: 12, DocksAvailable: &d, BikesDisabled: 1, DocksDisabled: 1, Installed: true, Renting: true, Returning: true,
			LastReported: time.Date(2024, 5, 6, 8, 0, 10, 0, time.UTC)},
		{Station: "dockless", BikesAvailable: 3, Installed: true, Returning: true, LastReported: time.Date(2024, 5, 6, 8, 1, 10, 0, time.UTC)},
	}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	data, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Decode(data)
	if err != nil || !reflect.DeepEqual(again, m) {
		t.Fatalf("round trip: %v, %+v", err, again)
	}
}

func TestDecodeRefuses(t *testing.T) {
	edit := func(old, new string) string { return strings.Replace(good, old, new, 1) }
	for _, tc := range []struct{ name, data, reason, detail string }{
		{"malformed", good[:40], ReasonMalformed, "unexpected EOF"},
		{"trailing", good + "{}", ReasonMalformed, "trailing data"},
		{"unknown field", edit(`"feed"`, `"colour": 1, "feed"`), ReasonMalformed, "unknown field"},
		{"schema 2", edit(`"schema": 1`, `"schema": 2`), ReasonSchema, "schema 2, want 1"},
		{"no schema", edit(`"schema": 1,`, ``), ReasonSchema, "schema none"},
		{"no feed", edit(`"feed": "citibike"`, `"feed": ""`), ReasonValue, "feed missing"},
		{"no at", edit(`"at": "2024-05-06T08:00:30Z",`, ``), ReasonTime, "at missing"},
		{"no stations", `{"schema": 1, "feed": "f", "at": "2024-05-06T08:00:30Z", "stations": []}`, ReasonEmpty, "no stations"},
		{"negative", edit(`"bikes_available": 12`, `"bikes_available": -1`), ReasonValue, "bikes_available -1 outside"},
		{"over capacity", edit(`"bikes_available": 12`, `"bikes_available": 13`), ReasonValue, "56 bikes and docks (available and disabled) exceed the capacity 55"},
		{"missing bikes", edit(`"bikes_available": 12,`, ``), ReasonValue, "bikes_available missing"},
		{"missing is_renting", edit(`"is_renting": true,`, ``), ReasonValue, "is_installed, is_renting and is_returning are required"},
		{"missing last_reported", edit(`, "last_reported": "2024-05-06T08:00:10Z"`, ``), ReasonTime, "last_reported missing"},
		{"report after snapshot", edit(`"2024-05-06T08:00:10Z"`, `"2024-05-06T08:05:00Z"`), ReasonTime, "after the snapshot"},
		{"twice", edit(`"station": "dockless"`, `"station": "72"`), ReasonValue, `station "72" listed twice`},
		{"fractional count", edit(`"bikes_available": 12`, `"bikes_available": 1.5`), ReasonMalformed, "cannot unmarshal"},
		{"long name", edit(`"W 52 St & 11 Av"`, `"`+strings.Repeat("é", MaxNameBytes/2+1)+`"`), ReasonValue, "name of 202 bytes exceeds 200"},
		{"too large", `{"feed": "` + strings.Repeat("x", MaxMessageBytes) + `"}`, ReasonTooLarge, "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.data))
			var e *Error
			if !errors.As(err, &e) || e.Reason != tc.reason || !strings.Contains(e.Detail, tc.detail) {
				t.Fatalf("got %v, want %s containing %q", err, tc.reason, tc.detail)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(strings.Replace(good, `"name": "W 52 St & 11 Av", `, ``, 1)))
	f.Add([]byte(strings.Replace(good, `"W 52 St & 11 Av"`, `"\u00e9\ud800 \u0000"`, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		out, err := Encode(m)
		if err != nil {
			t.Fatalf("an accepted message does not encode: %v", err)
		}
		again, err := Decode(out)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("an accepted message does not survive a round trip: %v\n%s", err, out)
		}
	})
}
