package test

import (
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/internal/app/backtest"
)

// decisionWorld is the history's protocol of the decision backtest:
// restock at 06:00 to U(0.3, 0.8)·capacity (the held-out benchmark's
// range), riders turned away move on by the benchmark's 300 m kernel
// with sink 0.2.
func decisionWorld(transfer [][]float64) backtest.WorldConfig {
	return backtest.WorldConfig{Seed: 2018, RestockHour: 6, Low: 0.3, High: 0.8, Transfer: transfer}
}

// TestDecisionBacktestUsage checks `dcgpd backtest --decision` refuses
// to start without its inputs, naming them.
func TestDecisionBacktestUsage(t *testing.T) {
	code, _, stderr := runCLI(t, "backtest", "--decision", "--config", shippedBikeModel)
	if code != 2 || !strings.Contains(stderr, "--citibike and --config are required") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "backtest", "--decision", "--citibike", "nowhere", "--config", shippedBikeModel, "--train", "2018-08-01", "--eval", "2018-07-01")
	if code != 1 || !strings.Contains(stderr, "want --train < --eval < --end") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestDecisionMustShowFlagsEachFailure: the must-show check of
// TestLongCitiBikeDecision passes a result that meets every requirement
// and names each one a result fails: the gap closed below 30%, more
// unmet pickups than the historical mean, a Brier score not below the
// historical mean's at some h ≥ 3 (h = 1 is not asked), a policy below
// hindsight.
func TestDecisionMustShowFlagsEachFailure(t *testing.T) {
	good := func() *backtest.DecisionResult {
		// Per station-day: dcgpd 2 + 3, HM 2 + 8, hindsight 1 + 2: gap closed (10 − 5)/(10 − 3) = 71%.
		return &backtest.DecisionResult{Policies: []string{"dcgpd", "hm-c1p1t3", "hindsight"}, Methods: []string{"dcgpd", "hm-c1p1t3"},
			StationDays: 10, UnmetPickups: []float64{20, 20, 10}, UnmetReturns: []float64{30, 80, 20}, Horizons: []int{1, 3, 24},
			Brier: [][2][]float64{{{0.2, 0.1, 0.1}, {0.2, 0.1, 0.1}}, {{0.1, 0.2, 0.2}, {0.1, 0.2, 0.2}}}}
	}
	if got := decisionMustShow(good()); len(got) != 0 {
		t.Fatalf("a result meeting every requirement failed: %v", got)
	}
	cases := []struct {
		name  string
		spoil func(r *backtest.DecisionResult)
		want  string
	}{
		{"gap", func(r *backtest.DecisionResult) { r.UnmetReturns[0] = 70 }, "of the gap"},
		{"pickups", func(r *backtest.DecisionResult) { r.UnmetPickups[0] = 21 }, "unmet pickups per station-day"},
		{"brier empty", func(r *backtest.DecisionResult) { r.Brier[0][0][2] = 0.2 }, "P(empty within 24)"},
		{"brier full", func(r *backtest.DecisionResult) { r.Brier[0][1][1] = 0.3 }, "P(full within 3)"},
		{"below hindsight", func(r *backtest.DecisionResult) { r.UnmetReturns[1] = 5 }, "below the hindsight best"},
	}
	for _, tc := range cases {
		r := good()
		tc.spoil(r)
		got := strings.Join(decisionMustShow(r), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: failures %q, want one naming %q", tc.name, got, tc.want)
		}
	}
}
