package page

import (
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestPageRingBounded: the ring keeps the newest Bins estimated bins
// with their observations, keeps observations that run ahead of the
// estimates, and refuses bins beyond max_ahead or older than it keeps.
func TestPageRingBounded(t *testing.T) {
	const ahead = 50
	g := newPageRing([]string{"a", "b"}, time.Hour, ahead)
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Hour) }
	v := func(x float64) *float64 { return &x }
	est := func(i int) *wire.LatentMessage {
		return &wire.LatentMessage{Kind: "filtered", BinStart: at(i), BinEnd: at(i + 1),
			Estimates: []wire.Estimate{{Product: "a", Mean: float64(i)}, {Product: "b", Mean: -float64(i)}}}
	}
	for i := 0; i < 500; i++ {
		// Observations run 40 bins ahead of the estimates.
		g.addObs(at(i+40), []wire.Observation{{Product: "a", Demand: v(float64(i + 40)), Supply: v(float64(i + 40))}, {Product: "zz", Demand: v(1)}})
		if i < 40 {
			g.addObs(at(i), []wire.Observation{{Product: "a", Demand: v(float64(i)), Supply: v(float64(i))}})
		}
		g.addLatent(est(i))
	}
	g.addObs(at(499+ahead+1), []wire.Observation{{Product: "a", Demand: v(1)}}) // beyond max_ahead
	g.addObs(at(10), []wire.Observation{{Product: "a", Demand: v(1)}})          // older than every kept bin
	g.addLatent(&wire.LatentMessage{Kind: "smoothed", Revision: 2, BinStart: at(450), Estimates: est(450).Estimates})
	g.addLatent(&wire.LatentMessage{Kind: "smoothed", Revision: 1, BinStart: at(450), Estimates: est(1).Estimates})
	if len(g.bins) != Bins+40 {
		t.Fatalf("%d bins kept, want %d estimated + 40 ahead", len(g.bins), Bins)
	}
	m := g.export("m", t0)
	bins := m.Products[0].Bins
	if len(bins) != Bins || !bins[0].BinStart.Equal(at(500-Bins)) || !bins[len(bins)-1].BinStart.Equal(at(499)) {
		t.Fatalf("exported %d bins from %v to %v", len(bins), bins[0].BinStart, bins[len(bins)-1].BinStart)
	}
	for j, b := range bins {
		i := 500 - Bins + j
		if b.Demand == nil || *b.Demand != float64(i) || !b.Censored || b.Filtered == nil || b.Filtered.Mean != float64(i) {
			t.Fatalf("bin %d: %+v", i, b)
		}
		if m.Products[1].Bins[j].Demand != nil || m.Products[1].Bins[j].Filtered.Mean != -float64(i) {
			t.Fatalf("product b, bin %d: %+v", i, m.Products[1].Bins[j])
		}
		if (b.Smoothed != nil) != (i == 450) || i == 450 && (b.Revision != 2 || b.Smoothed.Mean != 450) {
			t.Fatalf("bin %d: smoothed %+v revision %d", i, b.Smoothed, b.Revision)
		}
	}
}

// TestPageTurnedAway: a bin's point carries the turned-away demand and
// its lost part of the newest estimate that has them (the smoothed
// revision over the filtered one), and none where no estimate has them.
func TestPageTurnedAway(t *testing.T) {
	g := newPageRing([]string{"a", "b"}, 5*time.Minute, 10)
	t0 := time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)
	v := func(x float64) *float64 { return &x }
	g.addObs(t0, []wire.Observation{{Product: "a", Supply: v(0)}, {Product: "b", Demand: v(1)}})
	g.addLatent(&wire.LatentMessage{Kind: "filtered", BinStart: t0, BinEnd: t0.Add(5 * time.Minute),
		Estimates: []wire.Estimate{{Product: "a", Mean: 0.1, TurnedAway: v(0.12), Lost: v(0.05)}, {Product: "b", Mean: 1}}})
	m := g.export("ev", t0)
	a, b := m.Products[0].Bins[0], m.Products[1].Bins[0]
	if a.TurnedAway == nil || *a.TurnedAway != 0.12 || a.Lost == nil || *a.Lost != 0.05 || b.TurnedAway != nil || b.Lost != nil {
		t.Fatalf("filtered: a %+v, b %+v", a, b)
	}
	g.addLatent(&wire.LatentMessage{Kind: "smoothed", Revision: 1, BinStart: t0, BinEnd: t0.Add(5 * time.Minute),
		Estimates: []wire.Estimate{{Product: "a", Mean: 0.1, TurnedAway: v(0.08), Lost: v(0.03)}, {Product: "b", Mean: 1}}})
	if a = g.export("ev", t0).Products[0].Bins[0]; *a.TurnedAway != 0.08 || *a.Lost != 0.03 {
		t.Fatalf("smoothed: a %+v", a)
	}
}

// TestPageEmptiedByStatus: a bin sent with demand 0 that the model took
// as no observation with drivers turned away (a [[charging]] entry's
// status had the site full with nobody served) is drawn without its
// demand, as full with none served; an observed bin keeps its demand.
func TestPageEmptiedByStatus(t *testing.T) {
	g := newPageRing([]string{"a", "b"}, 5*time.Minute, 10)
	t0 := time.Date(2024, 5, 8, 13, 45, 0, 0, time.UTC)
	v := func(x float64) *float64 { return &x }
	g.addObs(t0, []wire.Observation{{Product: "a", Demand: v(0)}, {Product: "b", Demand: v(0)}})
	g.addLatent(&wire.LatentMessage{Kind: "filtered", BinStart: t0, BinEnd: t0.Add(5 * time.Minute),
		Estimates: []wire.Estimate{{Product: "a", Mean: 0.1, TurnedAway: v(0.11), Lost: v(0.04)}, {Product: "b", Mean: 0.02, Observed: true}}})
	m := g.export("ev", t0)
	a, b := m.Products[0].Bins[0], m.Products[1].Bins[0]
	if a.Demand != nil || a.TurnedAway == nil || b.Demand == nil || *b.Demand != 0 {
		t.Fatalf("a %+v (want no demand, turned away), b %+v (want demand 0)", a, b)
	}
}
