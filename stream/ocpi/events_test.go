package ocpi

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestReadEvents(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2024, 5, 6, 8, m, 0, 0, time.UTC) }
	good := "time,site,evse,status\n2024-05-06T08:05:00Z,a,a-1,CHARGING\n2024-05-06T08:00:00Z,a,a-1,AVAILABLE\n2024-05-06T08:05:00Z,b,b-1,BLOCKED\n"
	got, err := ReadEvents(strings.NewReader(good), "good.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []StatusEvent{{"a", "a-1", StatusAvailable, at(0)}, {"a", "a-1", StatusCharging, at(5)}, {"b", "b-1", StatusBlocked, at(5)}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v (sorted by time, ties in file order)", i, got[i], want[i])
		}
	}
	var buf bytes.Buffer
	if err := WriteEvents(&buf, got); err != nil {
		t.Fatal(err)
	}
	again, err := ReadEvents(&buf, "written")
	if err != nil || len(again) != len(got) {
		t.Fatalf("round trip: %+v, %v", again, err)
	}
	for i := range got {
		if again[i] != got[i] {
			t.Errorf("round trip event %d: %+v, want %+v", i, again[i], got[i])
		}
	}
	bad := []struct{ name, in, want string }{
		{"empty", "", "empty"},
		{"header", "at,site,evse,status\n", "line 1: header"},
		{"time", EventsHeader + "\n08:00,a,a-1,CHARGING\n", "x.csv line 2: time"},
		{"year", EventsHeader + "\n1999-05-06T08:00:00Z,a,a-1,CHARGING\n", "outside 2000–2200"},
		{"status", EventsHeader + "\n2024-05-06T08:00:00Z,a,a-1,FREE\n", "line 2: status \"FREE\""},
		{"site", EventsHeader + "\n2024-05-06T08:00:00Z,,a-1,CHARGING\n", "no site"},
		{"evse", EventsHeader + "\n2024-05-06T08:00:00Z,a, ,CHARGING\n", "no evse"},
		{"fields", EventsHeader + "\n2024-05-06T08:00:00Z,a,CHARGING\n", "wrong number of fields"},
	}
	for _, c := range bad {
		if _, err := ReadEvents(strings.NewReader(c.in), "x.csv"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func FuzzReadEvents(f *testing.F) {
	f.Add([]byte("time,site,evse,status\n2024-05-06T08:05:00Z,a,a-1,CHARGING\n2024-05-06T08:00:00Z,a,a-1,AVAILABLE\n"))
	f.Add([]byte("time,site,evse,status\n2024-05-06T08:05:00+02:00,\"a,b\",x,UNKNOWN\n"))
	f.Add([]byte("\ufefftime,site,evse,status\r\n2024-05-06T08:05:00.5Z,a,a-1,RESERVED\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := ReadEvents(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		for i, e := range evs {
			if e.Site == "" || e.EVSE == "" || !e.Status.Valid() || e.At.Before(eventsFrom) || !e.At.Before(eventsTo) {
				t.Fatalf("accepted a bad event %+v", e)
			}
			if i > 0 && e.At.Before(evs[i-1].At) {
				t.Fatalf("events out of time order at %d", i)
			}
		}
	})
}
