package ocpi

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDecodeRecorded(t *testing.T) {
	now := time.Date(2024, 5, 6, 8, 10, 0, 0, time.UTC)
	b, err := os.ReadFile(filepath.Join("testdata", "locations_page1.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode(b, now, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if p.Locations != 2 || len(p.Statuses) != 6 || len(p.Problems) != 0 {
		t.Fatalf("page 1: %d locations, %d statuses, problems %v; want 2, 6, none", p.Locations, len(p.Statuses), p.Problems)
	}
	first := p.Statuses[0]
	if first.Site != "site-north" || first.EVSE != "N-1" || first.Status != "CHARGING" || !first.At.Equal(time.Date(2024, 5, 6, 8, 2, 11, 0, time.UTC)) {
		t.Errorf("first status %+v", first)
	}
	if _, err := Decode(b, now, time.Minute); err == nil {
		t.Error("a response 5 minutes old passed max_age 1m")
	}
	for _, bad := range []string{"", "null", "[]", `{"status_code":1000}`, `{"data":[],"status_code":1000} {}`, `{"data":{},"status_code":1000}`} {
		if _, err := Decode([]byte(bad), now, 0); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"locations_page1.json", "locations_page2.json", "malformed.json", "ocpi_error.json", "unknown_status.json", "stale_evse.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	now := time.Date(2024, 5, 6, 8, 10, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b, now, 10*time.Minute)
		if err != nil {
			return
		}
		for _, s := range p.Statuses {
			if s.Site == "" || s.EVSE == "" || !s.Status.Valid() || s.At.Sub(now) > time.Minute {
				t.Fatalf("accepted a bad status %+v", s)
			}
		}
	})
}
