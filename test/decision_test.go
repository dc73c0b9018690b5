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
