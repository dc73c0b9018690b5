package backtest

import (
	"math"
	"testing"

	"github.com/dcgpd/dcgpd/inventory"
)

// TestCorrelatedFlows checks the correlated-flows integration against
// two independent routes: with no variance it is the chain at the means
// (exactly), and with independent flows (r = 0) on a busy station, whose
// rates never reach the clamp at 0, it is the Planner's own ρ = 1
// integration with 16 Gauss nodes per flow, its most (within 0.005 in
// probability and 1% in unmet trips: the 40 × 40 strata lose a little of the tails).
func TestCorrelatedFlows(t *testing.T) {
	cfg := inventory.DefaultConfig()
	cfg.PlanningBins = decisionDay
	pl, err := inventory.NewPlanner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SharedNodes = 16
	ref, err := inventory.NewPlanner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	in := newStationInput()
	for k := range decisionDay {
		in.lam[k] = 6 + 3*math.Sin(float64(k)/4)
		in.mu[k] = 6 + 3*math.Cos(float64(k)/5)
		in.plugL[k], in.plugM[k] = in.lam[k], in.mu[k]
	}
	c := &policyCall{pl: pl, in: in, st: inventory.Station{Capacity: 40, Bikes: 18}}
	var want inventory.Risk
	if err := pl.RiskAtRates(&want, c.st, in.plugL, in.plugM); err != nil {
		t.Fatal(err)
	}
	if err := (&correlatedFlows{r: 0.5, n: 4}).risk(c); err != nil {
		t.Fatal(err)
	}
	assertRiskNear(t, "no variance", &c.dst, &want, 1e-12, 1e-12)
	for k := range decisionDay {
		in.lamVar[k], in.muVar[k] = 0.4, 0.3 // sd 0.63 and 0.55 a bin, rates ≥ 3
	}
	if err := ref.Risk(&want, c.st, inventory.Forecast{Mean: in.lam, Var: in.lamVar}, inventory.Forecast{Mean: in.mu, Var: in.muVar}); err != nil {
		t.Fatal(err)
	}
	if err := (&correlatedFlows{r: 0, n: 40}).risk(c); err != nil {
		t.Fatal(err)
	}
	assertRiskNear(t, "independent flows", &c.dst, &want, 0.005, 0.01)
}

func assertRiskNear(t *testing.T, name string, got, want *inventory.Risk, prob, rel float64) {
	t.Helper()
	for h := range want.EmptyWithin {
		if math.Abs(got.EmptyWithin[h]-want.EmptyWithin[h]) > prob || math.Abs(got.FullWithin[h]-want.FullWithin[h]) > prob {
			t.Errorf("%s, h=%d: P(empty) %.5f want %.5f, P(full) %.5f want %.5f", name, h+1, got.EmptyWithin[h], want.EmptyWithin[h], got.FullWithin[h], want.FullWithin[h])
		}
	}
	for _, u := range [][2]float64{{got.UnmetPickups, want.UnmetPickups}, {got.UnmetReturns, want.UnmetReturns}} {
		if math.Abs(u[0]-u[1]) > rel*math.Abs(u[1])+1e-12 {
			t.Errorf("%s: unmet %.5f want %.5f", name, u[0], u[1])
		}
	}
	if got.Best != want.Best {
		t.Errorf("%s: s* %d want %d", name, got.Best, want.Best)
	}
}
