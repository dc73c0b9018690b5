package backtest

import (
	"strings"
	"testing"
)

// TestDecisionTableGapClosed: the table states the share of the gap
// between the historical mean's and hindsight's unmet trips that dcgpd's
// s* closes, (hm − dcgpd)/(hm − hindsight).
func TestDecisionTableGapClosed(t *testing.T) {
	r := &DecisionResult{Policies: []string{"dcgpd", "dcgpd-plugin", "hm-c1p1t3", "hindsight"}, StationDays: 10,
		UnmetPickups: []float64{200, 210, 150, 100}, UnmetReturns: []float64{140, 140, 250, 200}}
	// Per station-day: dcgpd 34, HM 40, hindsight 30: (40 − 34)/(40 − 30) = 60%.
	if g, ok := r.GapClosed(); !ok || g != 0.6 {
		t.Fatalf("GapClosed = %v, %v; want 0.6", g, ok)
	}
	var b strings.Builder
	if err := r.WriteDecisionTable(&b, "c"); err != nil {
		t.Fatal(err)
	}
	if want := "dcgpd's s* closes 60.0% of the gap"; !strings.Contains(b.String(), want) {
		t.Fatalf("table:\n%s\nwant a line with %q", b.String(), want)
	}
	// No gap (hindsight as good as the historical mean): no share.
	r.UnmetPickups[3], r.UnmetReturns[3] = 150, 250
	if _, ok := r.GapClosed(); ok {
		t.Fatal("a share of a zero gap")
	}
}
