package backtest

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/inventory"
)

// diagStats accumulates the probes of the diagnosis.
type diagStats struct {
	n [2]float64
	// bias of dcgpd's and HM's pickups and returns over the day,
	// [after a censored pickup in the day before][flow][method].
	bias [2][2][2]float64
	// net-flow error (returns − pickups, summed over the first h bins):
	// the mean and the mean square of the realised minus dcgpd's mean, and
	// the variance the chain assumes with the mean plugged in (Σ λ + μ)
	// and with the latent variance added (ρ = 1: (Σ σ)²).
	netErr, netErr2, chainVar, latentVar [4]float64
}

var diagH = [4]int{3, 6, 12, 24}

// TestLongDecisionDiagnosis runs controlled variants of the decision on
// a choice month (DCGPD_DIAG_SPAN=TRAIN,EVAL,END, DCGPD_DIAG_STATIONS),
// never a scored one. Long mode and the Citi Bike data only.
func TestLongDecisionDiagnosis(t *testing.T) {
	if os.Getenv("DCGPD_DIAG") == "" {
		t.Skip("set DCGPD_DIAG=1 (a diagnosis, not a check)")
	}
	dir := "../../../../shared/data/citibike"
	ids := parseIDs(t, os.Getenv("DCGPD_DIAG_STATIONS"))
	span := strings.Split(os.Getenv("DCGPD_DIAG_SPAN"), ",")
	var ts [3]time.Time
	for i := range ts {
		ts[i], _ = time.Parse(time.DateOnly, span[i])
	}
	sp, err := spec.Load("../../../examples/citibike-hourly/model.toml")
	if err != nil {
		t.Fatal(err)
	}
	d, transfer, err := CitiBikeStations(dir, ids, ts[0], ts[2].Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	o := DecisionOptions{Spec: sp, Data: d, World: WorldConfig{Seed: 2018, RestockHour: 6, Low: 0.3, High: 0.8, Transfer: transfer},
		EvalFrom: ts[1], End: ts[2].Add(24 * time.Hour), DayStart: 6, Planner: inventory.DefaultConfig(), Horizons: []int{3, 6, 12, 24}, Weeks: 4}
	o.Planner.PlanningBins = decisionDay
	pl, err := inventory.NewPlanner(o.Planner)
	if err != nil {
		t.Fatal(err)
	}
	indep := o.Planner
	indep.Shared = 0
	pi, err := inventory.NewPlanner(indep)
	if err != nil {
		t.Fatal(err)
	}
	hist := SimulateHistory(o.World, d.Start.Hour(), d.Pickups, d.Returns, d.Capacity)
	flows, err := o.streamFlows(context.Background(), hist)
	if err != nil {
		t.Fatal(err)
	}
	var st diagStats
	o.policies = diagPolicies(t, o.Planner, &st)
	res := &DecisionResult{Horizons: o.Horizons, HistoryCensored: [2]float64{fraction(hist.PickupsCensored), fraction(hist.ReturnsCensored)}}
	for _, p := range o.policies {
		res.Methods = append(res.Methods, p.name)
	}
	res.Policies = append(append([]string(nil), res.Methods...), "hindsight")
	if err := o.decide([2]*inventory.Planner{pl, pi}, hist, flows, res); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = res.WriteDecisionTable(&b, "diag")
	_ = res.WriteCalibration(&b)
	for p, name := range res.Policies {
		fmt.Fprintf(&b, "mean level %s %.3f\n", name, res.MeanLevel[p])
	}
	for c := range 2 {
		fmt.Fprintf(&b, "after censored pickup=%v (n %.0f): bias/day pickups dcgpd %.2f hm %.2f; returns dcgpd %.2f hm %.2f\n", c == 1, st.n[c],
			st.bias[c][0][0]/st.n[c], st.bias[c][0][1]/st.n[c], st.bias[c][1][0]/st.n[c], st.bias[c][1][1]/st.n[c])
	}
	n := st.n[0] + st.n[1]
	for hi, h := range diagH {
		fmt.Fprintf(&b, "net flow h=%d: mean error %.2f, mean square %.1f; chain variance plug-in %.1f, with latent (rho=1) %.1f\n", h,
			st.netErr[hi]/n, st.netErr2[hi]/n, st.chainVar[hi]/n, st.latentVar[hi]/n)
	}
	t.Log("\n" + b.String())
}

func parseIDs(t *testing.T, s string) []int {
	var ids []int
	for _, f := range strings.Split(s, ",") {
		var id int
		if _, err := fmt.Sscan(f, &id); err != nil {
			t.Fatalf("DCGPD_DIAG_STATIONS: %v", err)
		}
		ids = append(ids, id)
	}
	return ids
}

func diagPolicies(t *testing.T, cfg inventory.Config, st *diagStats) []decisionPolicy {
	planner := func(f func(*inventory.Config)) *inventory.Planner {
		c := cfg
		f(&c)
		p, err := inventory.NewPlanner(c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	gh := planner(func(c *inventory.Config) { c.SharedNodes = 16 }) // the rule's most nodes (24 Gauss–Hermite nodes before the kink-split rule)
	pw2 := planner(func(c *inventory.Config) { c.PickupWeight = 2 })
	h12 := planner(func(c *inventory.Config) { c.PlanningBins = 12 })
	scaled := func(f float64) func(c *policyCall) error {
		return func(c *policyCall) error {
			lv, mv := make([]float64, decisionDay), make([]float64, decisionDay)
			for j := range lv {
				lv[j], mv[j] = f*c.in.lamVar[j], f*c.in.muVar[j]
			}
			return c.pl.Risk(&c.dst, c.st, inventory.Forecast{Mean: c.in.lam, Var: lv}, inventory.Forecast{Mean: c.in.mu, Var: mv})
		}
	}
	if os.Getenv("DCGPD_DIAG_FLOWS") != "" {
		return []decisionPolicy{
			defaultPolicies()[0],
			defaultPolicies()[1],
			defaultPolicies()[2],
			defaultPolicies()[3],
			{"flows-r0-strata", (&correlatedFlows{r: 0, n: 12}).risk},
			{"flows-r0.5", (&correlatedFlows{r: 0.5, n: 12}).risk},
			{"flows-r1", (&correlatedFlows{r: 1, n: 24}).risk},
		}
	}
	return []decisionPolicy{
		defaultPolicies()[0],
		{"dcgpd-plugin", func(c *policyCall) error {
			cens := 0
			for i := max(0, c.di-24); i < c.di; i++ {
				if c.hist.PickupsCensored[i][c.k] {
					cens = 1
				}
			}
			st.n[cens]++
			for hi, h := range diagH {
				var e, v, sl, sm float64
				for j := range h {
					e += (c.in.trueM[j] - c.in.trueL[j]) - (c.in.plugM[j] - c.in.plugL[j])
					v += c.in.plugL[j] + c.in.plugM[j]
					sl += math.Sqrt(c.in.lamVar[j])
					sm += math.Sqrt(c.in.muVar[j])
				}
				st.netErr[hi] += e
				st.netErr2[hi] += e * e
				st.chainVar[hi] += v
				st.latentVar[hi] += v + sl*sl + sm*sm
			}
			for j := range decisionDay {
				st.bias[cens][0][0] += c.in.plugL[j] - c.in.trueL[j]
				st.bias[cens][0][1] += c.in.hmL[j] - c.in.trueL[j]
				st.bias[cens][1][0] += c.in.plugM[j] - c.in.trueM[j]
				st.bias[cens][1][1] += c.in.hmM[j] - c.in.trueM[j]
			}
			return c.pl.RiskAtRates(&c.dst, c.st, c.in.plugL, c.in.plugM)
		}},
		defaultPolicies()[3],
		{"nodes16", func(c *policyCall) error {
			l, m := c.forecasts()
			return gh.Risk(&c.dst, c.st, l, m)
		}},
		{"var0.25", scaled(0.25)},
		{"oracle", func(c *policyCall) error { return c.pl.RiskAtRates(&c.dst, c.st, c.in.trueL, c.in.trueM) }},
		{"plugL-trueM", func(c *policyCall) error { return c.pl.RiskAtRates(&c.dst, c.st, c.in.plugL, c.in.trueM) }},
		{"trueL-plugM", func(c *policyCall) error { return c.pl.RiskAtRates(&c.dst, c.st, c.in.trueL, c.in.plugM) }},
		{"hmL-plugM", func(c *policyCall) error { return c.pl.RiskAtRates(&c.dst, c.st, c.in.hmL, c.in.plugM) }},
		{"plugL-hmM", func(c *policyCall) error { return c.pl.RiskAtRates(&c.dst, c.st, c.in.plugL, c.in.hmM) }},
		{"plug-pw2", func(c *policyCall) error { return pw2.RiskAtRates(&c.dst, c.st, c.in.plugL, c.in.plugM) }},
		{"plug-h12", func(c *policyCall) error { return h12.RiskAtRates(&c.dst, c.st, c.in.plugL, c.in.plugM) }},
	}
}
