package rebalance

import (
	"strings"
	"testing"
	"time"
)

func TestRankingFromEntries(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Name = "city"
	t0 := time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)
	entry := func(station string, bin int, status string) Entry {
		r := StationRisk{Station: station, Status: status}
		if status == StatusOK {
			r.EmptyWithin, r.FullWithin = make([]float64, 6), make([]float64, 6)
		}
		return Entry{Schema: SchemaVersion, Name: "city", BinStart: t0.Add(time.Duration(bin) * time.Hour),
			BinEnd: t0.Add(time.Duration(bin+1) * time.Hour), Risk: r}
	}
	for _, tc := range []struct {
		name     string
		entries  []Entry
		stations []string
		dropped  int
		riskBins int
		usable   bool
		err      string
	}{
		{"empty bucket", nil, nil, 0, 0, false, ""},
		{"one bin", []Entry{entry("a", 3, StatusOK), entry("b", 3, StatusStale)}, []string{"a", "b"}, 0, 3, true, ""},
		{"a station left from an older bin", []Entry{entry("old", 1, StatusOK), entry("a", 3, StatusStale)}, []string{"a"}, 1, 0, false, ""},
		{"another system", []Entry{{Schema: SchemaVersion, Name: "other"}}, nil, 0, 0, false, `system "other"`},
		{"another schema", []Entry{{Schema: 99, Name: "city"}}, nil, 0, 0, false, "schema 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rk, dropped, err := RankingFromEntries(cfg, tc.entries)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || dropped != tc.dropped {
				t.Fatalf("error %v, dropped %d (want %d)", err, dropped, tc.dropped)
			}
			if tc.stations == nil {
				if rk != nil {
					t.Fatalf("ranking %+v from no entries", rk)
				}
				return
			}
			var got []string
			for _, s := range rk.Stations {
				got = append(got, s.Station)
			}
			if strings.Join(got, ",") != strings.Join(tc.stations, ",") || !rk.Restored || rk.RiskBins != tc.riskBins || rk.usable() != tc.usable ||
				!rk.BinEnd.Equal(t0.Add(4*time.Hour)) {
				t.Fatalf("ranking: stations %v restored %v risk bins %d usable %v bin end %v", got, rk.Restored, rk.RiskBins, rk.usable(), rk.BinEnd)
			}
		})
	}
}
