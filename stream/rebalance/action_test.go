package rebalance

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

func TestDecide(t *testing.T) {
	rising := []float64{0.1, 0.3, 0.6, 0.8, 0.95}
	low := []float64{0, 0.01, 0.02, 0.03, 0.04}
	for _, tc := range []struct {
		name                  string
		bikes, capacity, best int
		empty, full           []float64
		bins                  int
		want                  Action
	}{
		{"add, urgent in the third bin", 2, 20, 8, rising, low, 3, Action{Move: 6, Urgency: 0.6, Due: 2}},
		{"add, urgent only beyond the horizon", 2, 20, 8, rising, low, 2, Action{Move: 6, Urgency: 0.3, Due: -1}},
		{"remove, urgent now", 18, 20, 10, low, []float64{0.7, 0.9, 1}, 3, Action{Move: -8, Urgency: 1, Due: 0}},
		{"threshold reached exactly", 18, 20, 10, low, []float64{0.2, 0.5, 0.6}, 3, Action{Move: -8, Urgency: 0.6, Due: 1}},
		{"zero bikes: add now", 0, 20, 5, []float64{1, 1, 1}, low, 3, Action{Move: 5, Urgency: 1, Due: 0}},
		{"zero bikes at s* = 0: no move, not urgent", 0, 20, 0, []float64{1, 1, 1}, low, 3, Action{Move: 0, Due: -1}},
		{"s* above the capacity: add up to the free docks", 15, 20, 25, rising, low, 5, Action{Move: 5, Urgency: 0.95, Due: 2}},
		{"s* below zero: remove at most the bikes there", 4, 20, -3, low, rising, 5, Action{Move: -4, Urgency: 0.95, Due: 2}},
		{"full station, remove", 20, 20, 12, low, []float64{1, 1}, 2, Action{Move: -8, Urgency: 1, Due: 0}},
		{"no capacity", 0, 0, 0, []float64{1}, []float64{1}, 1, Action{Move: 0, Due: -1}},
		{"never urgent", 10, 20, 12, low, low, 5, Action{Move: 2, Urgency: 0.04, Due: -1}},
		{"an add ignores P(full)", 5, 20, 9, low, []float64{0.9, 0.9}, 2, Action{Move: 4, Urgency: 0.01, Due: -1}},
		{"horizon beyond the forecast", 2, 20, 8, rising, low, 99, Action{Move: 6, Urgency: 0.95, Due: 2}},
		{"no forecast bins", 2, 20, 8, nil, nil, 3, Action{Move: 6, Due: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(tc.bikes, tc.capacity, tc.best, tc.empty, tc.full, tc.bins, 0.5)
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRiskBins(t *testing.T) {
	for _, tc := range []struct {
		horizon, width time.Duration
		h, want        int
	}{
		{3 * time.Hour, time.Hour, 24, 3},
		{3 * time.Hour, time.Hour, 2, 2},
		{90 * time.Minute, time.Hour, 24, 2},
		{3 * time.Hour, 15 * time.Minute, 24, 12},
		{time.Minute, time.Hour, 24, 1},
		{3 * time.Hour, time.Hour, 0, 0},
		{3 * time.Hour, 0, 6, 6},
	} {
		if got := riskBins(tc.horizon, tc.width, tc.h); got != tc.want {
			t.Errorf("riskBins(%v, %v, %d) = %d, want %d", tc.horizon, tc.width, tc.h, got, tc.want)
		}
	}
}

func TestSortByUrgency(t *testing.T) {
	by := func(min int) *time.Time { v := at(min); return &v }
	list := []StationRisk{
		{Station: "calm", Status: StatusOK, Urgency: 0.2, Score: 0.9},
		{Station: "closed", Status: StatusOutOfService},
		{Station: "later", Status: StatusOK, Urgent: true, Urgency: 0.9, By: by(180)},
		{Station: "calmer", Status: StatusOK, Urgency: 0.1},
		{Station: "now", Status: StatusOK, Urgent: true, Urgency: 0.6, By: by(60)},
		{Station: "now, likelier", Status: StatusOK, Urgent: true, Urgency: 0.8, By: by(60)},
	}
	SortByUrgency(list)
	want := []string{"now, likelier", "now", "later", "calm", "calmer", "closed"}
	for i, s := range list {
		if s.Station != want[i] {
			t.Fatalf("position %d: %s, want the order %v", i, s.Station, want)
		}
	}
}

// TestRiskerActs: each station's record carries its name (from any
// sample, a stale one too), its move to s* and, when urgent, by when;
// the messages state the risk horizon and the threshold.
func TestRiskerActs(t *testing.T) {
	cfg := testConfig()
	stations := []string{"empty", "fine", "stale"}
	tr := NewTracker(cfg, stations)
	smp := func(id, name string, bikes, docks int, reported time.Time) stationstatus.Sample {
		return stationstatus.Sample{Station: id, Name: name, BikesAvailable: bikes, DocksAvailable: ip(docks),
			Installed: true, Renting: true, Returning: true, LastReported: reported}
	}
	tr.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: at(10), Stations: []stationstatus.Sample{smp("stale", "Old Slip", 3, 3, at(9))}})
	tr.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: at(58), Stations: []stationstatus.Sample{
		smp("empty", "Astor Pl", 0, 20, at(57)), smp("fine", "", 10, 10, at(57))}})
	pick := flow("pickups", stations, []float64{4, 1, 1}, 6)
	ret := flow("returns", stations, []float64{1, 1, 1}, 6)
	rk, err := NewRisker(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rk.Compute(context.Background(), pick, ret)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]StationRisk{}
	for _, r := range got {
		byID[r.Station] = r
	}
	e := byID["empty"]
	if e.Name != "Astor Pl" || byID["stale"].Name != "Old Slip" || byID["fine"].Name != "" {
		t.Errorf("names %q %q %q", e.Name, byID["stale"].Name, byID["fine"].Name)
	}
	if e.Move != e.Best-e.Bikes || e.Move <= 0 || !e.Urgent || e.By == nil || !e.By.Equal(at(60)) || e.Urgency != 1 {
		t.Errorf("an empty station: move %d (s* %d), urgent %v by %v urgency %v; want an add by the bin's end", e.Move, e.Best, e.Urgent, e.By, e.Urgency)
	}
	if f := byID["fine"]; f.Move != f.Best-f.Bikes || f.Urgent != (f.By != nil) {
		t.Errorf("fine: %+v", f)
	}
	if s := byID["stale"]; s.Move != 0 || s.Urgent || s.By != nil {
		t.Errorf("a station without a risk has a move: %+v", s)
	}
	msgs := rk.Messages(pick, got, StationsPerMessage)
	data, err := msgs[0].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		RiskBins  int     `json:"risk_bins"`
		Threshold float64 `json:"urgency_threshold"`
		Stations  []map[string]any
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.RiskBins != 3 || m.Threshold != 0.5 || m.Stations[0]["name"] != "Astor Pl" || m.Stations[0]["by"] != "2024-05-06T09:00:00Z" {
		t.Errorf("message: risk_bins %d, threshold %v, first station %v", m.RiskBins, m.Threshold, m.Stations[0])
	}
}

func TestConfigValidatesUrgency(t *testing.T) {
	if c := testConfig(); c.Validate() != nil || c.RiskHorizon != 3*time.Hour || c.UrgencyThreshold != 0.5 {
		t.Fatalf("defaults: %v, risk_horizon %v, urgency_threshold %v", c.Validate(), c.RiskHorizon, c.UrgencyThreshold)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"risk_horizon", func(c *Config) { c.RiskHorizon = 0 }},
		{"urgency_threshold", func(c *Config) { c.UrgencyThreshold = 0 }},
		{"urgency_threshold", func(c *Config) { c.UrgencyThreshold = 1.01 }},
	} {
		c := testConfig()
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%+v: error %v, want one naming %s", c, err, tc.name)
		}
	}
}
