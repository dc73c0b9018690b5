package rebalance

import (
	"context"
	"math"
	"testing"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// TestRealisticSetNotMostlyUrgent: a synthetic evening at twelve
// stations shaped like Manhattan Citi Bike stations (capacities 19 to
// 55, stocked from empty to full, 1 to 12 trips an hour each way with a
// daily profile, commuter imbalances at a few), forecast 24 hourly bins
// ahead. The page paints a row red when its record is urgent: fewer than
// half are, the empty and the full one among them, while the larger of
// P(empty) and P(full) over the whole 24 h (the old rule's score) passes
// 0.5 at most of them.
func TestRealisticSetNotMostlyUrgent(t *testing.T) {
	type st struct {
		id               string
		capacity, bikes  int
		pickups, returns float64 // trips an hour at the day's mean
	}
	set := []st{
		{"empty", 31, 0, 6, 5}, {"full", 27, 27, 5, 7}, {"busy-balanced", 55, 28, 12, 12},
		{"commuter-out", 39, 30, 8, 5}, {"commuter-in", 45, 12, 5, 8}, {"quiet", 19, 9, 1, 1},
		{"quiet-low", 23, 4, 1.5, 1.2}, {"mid", 35, 17, 4, 4}, {"mid-high", 33, 24, 4, 4.5},
		{"mid-low", 29, 8, 4.5, 4}, {"big", 47, 20, 7, 6.5}, {"small", 21, 11, 2, 2},
	}
	cfg := testConfig()
	ids := make([]string, len(set))
	samples := make([]stationstatus.Sample, len(set))
	for i, s := range set {
		ids[i] = s.id
		samples[i] = stationstatus.Sample{Station: s.id, BikesAvailable: s.bikes, DocksAvailable: ip(s.capacity - s.bikes),
			Installed: true, Renting: true, Returning: true, LastReported: at(59)}
	}
	tr := NewTracker(cfg, ids)
	tr.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: at(59), Stations: samples})
	const horizon = 24
	// The forecast starts at 09:00; a daily profile with peaks at 09:00
	// and 18:00 and a quiet night, mean 1; variance (0.3 × mean)².
	profile := func(hour int) float64 {
		x := float64(hour % 24)
		return 0.25 + 1.2*math.Exp(-(x-9)*(x-9)/4) + 1.2*math.Exp(-(x-18)*(x-18)/4)
	}
	build := func(model string, rate func(st) float64) *FlowForecast {
		f := &FlowForecast{Model: model, BinStart: at(0), BinEnd: at(60), Products: ids}
		for h := range horizon {
			m, v := make([]float64, len(set)), make([]float64, len(set))
			for i, s := range set {
				m[i] = rate(s) * profile(9+h)
				v[i] = 0.09 * m[i] * m[i]
			}
			f.Mean, f.Var = append(f.Mean, m), append(f.Var, v)
		}
		return f
	}
	rk, err := NewRisker(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rk.Compute(context.Background(), build("pickups", func(s st) float64 { return s.pickups }), build("returns", func(s st) float64 { return s.returns }))
	if err != nil {
		t.Fatal(err)
	}
	urgent, oldRed := map[string]bool{}, 0
	for _, r := range got {
		if r.Status != StatusOK {
			t.Fatalf("%s: %s %s", r.Station, r.Status, r.Detail)
		}
		if r.Urgent {
			urgent[r.Station] = true
		}
		if r.Score >= 0.5 {
			oldRed++
		}
		t.Logf("%-14s %2d/%2d s* %2d move %+3d urgency %.2f urgent %-5v by %v; P(empty, full within 24 h) %.2f %.2f",
			r.Station, r.Bikes, r.Capacity, r.Best, r.Move, r.Urgency, r.Urgent, r.By, r.EmptyWithin[horizon-1], r.FullWithin[horizon-1])
	}
	t.Logf("urgent (red) %d of %d; the 24-hour score at 0.5 paints %d", len(urgent), len(got), oldRed)
	if 2*len(urgent) >= len(got) {
		t.Errorf("%d of %d rows urgent: the page would be mostly red", len(urgent), len(got))
	}
	if !urgent["empty"] || !urgent["full"] {
		t.Errorf("the empty and the full station must be urgent, urgent: %v", urgent)
	}
	if 2*oldRed <= len(got) {
		t.Errorf("the 24-hour score paints %d of %d: this set no longer shows what the old rule did", oldRed, len(got))
	}
}
