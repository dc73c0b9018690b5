package test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/app/backtest"
	"github.com/dcgpd/dcgpd/internal/app/charging"
	"github.com/dcgpd/dcgpd/stream/csvio"
)

// evConstantRate is the small simulated case whose demand is known:
// drivers arrive at each of evSites as a Poisson process of rate
// evRate per hour, day and night, and stay an exponential time of mean
// 3 hours (2.7 chargers wanted on average, against pools of 3, 3 and 2),
// under evProtocol; 10 days from Monday 2024-05-06.
const evRate = 0.9

func evConstantRate(t *testing.T, days int) *charging.Table {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 9))
	start := time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)
	sites := evSites()
	net := &charging.Network{Sites: sites, SiteOf: map[string]int{}}
	var ss []charging.Session
	for s := range sites {
		for c := range 10 {
			net.SiteOf[fmt.Sprintf("s%d-c%d", s, c)] = s
		}
		for at := start; ; {
			at = at.Add(time.Duration(rng.ExpFloat64() / evRate * float64(time.Hour)))
			if !at.Before(start.Add(time.Duration(days) * 24 * time.Hour)) {
				break
			}
			stay := time.Duration(rng.ExpFloat64() * 3 * float64(time.Hour))
			ss = append(ss, charging.Session{Start: at, End: at.Add(stay), Charger: fmt.Sprintf("s%d-c%d", s, rng.IntN(10))})
		}
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Start.Before(ss[j].Start) })
	out, err := charging.Simulate(ss, net, evProtocol)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := out.Bins(start, 5*time.Minute, days*288)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// evBacktest streams a table through the daemon's runner as
// TestLongEVCharging does (daily re-smooths of 576 bins), the model of
// examples/ev-5min either as fitted there or learned on the first
// trainDays, and keeps every evaluated bin's filtered estimate.
func evBacktest(t *testing.T, tb *charging.Table, trainDays int, learn bool) *backtest.Result {
	t.Helper()
	return evBacktestWith(t, tb, trainDays, learn, nil)
}

// evBacktestWith is evBacktest with the observations CSV's lines edited
// first (edit nil: as written).
func evBacktestWith(t *testing.T, tb *charging.Table, trainDays int, learn bool, edit func(lines []string)) *backtest.Result {
	t.Helper()
	var obsCSV, truthCSV, prodCSV bytes.Buffer
	for _, err := range []error{tb.WriteObs(&obsCSV), tb.WriteTruth(&truthCSV), tb.WriteProducts(&prodCSV)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if edit != nil {
		lines := strings.Split(strings.TrimSuffix(obsCSV.String(), "\n"), "\n")
		edit(lines)
		obsCSV.Reset()
		obsCSV.WriteString(strings.Join(lines, "\n") + "\n")
	}
	obs, err := csvio.ReadObs(&obsCSV, "obs")
	if err != nil {
		t.Fatal(err)
	}
	prods, err := csvio.ReadProducts(&prodCSV, "products")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Load("../examples/ev-5min/model.toml")
	if err != nil {
		t.Fatal(err)
	}
	sp.Fit.Learn = &learn
	truth := truthCSV.String()
	rs := config.DefaultModelConfig().Resmooth
	rs.EveryBins, rs.Window = 288, 576
	days := len(tb.Cells) / 288
	o := backtest.Options{Spec: sp, Obs: obs, Products: prods, Bin: 5 * time.Minute, Origin: tb.Origin,
		EvalFrom: tb.Origin.Add(time.Duration(trainDays) * 24 * time.Hour), Horizon: 1, Horizons: []int{1}, Weeks: 1, Resmooth: &rs,
		Tail:  (days - trainDays) * 288,
		Truth: func(g *backtest.Grid) error { return backtest.ReadTruth(strings.NewReader(truth), "truth", g) }}
	res, err := o.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// evClass sums, over the evaluated site-bins of one class (free, partly
// full, full throughout), the filtered latent mean, the known rate, the
// sessions served, the drivers turned away and the model's estimate of
// them.
type evClass struct {
	bins                           int
	mean, rate, served, truth, est float64
}

// evClasses splits the evaluated site-bins by how full the site was.
func evClasses(t *testing.T, tb *charging.Table, res *backtest.Result, from int) map[string]*evClass {
	t.Helper()
	unmet := evUnmet(t, tb, res, from)
	out := map[string]*evClass{"free": {}, "partly full": {}, "full throughout": {}}
	for b := from; b < len(tb.Cells); b++ {
		for k, c := range tb.Cells[b] {
			cl := out["free"]
			switch {
			case c.FullFraction >= 1:
				cl = out["full throughout"]
			case c.FullFraction > 0:
				cl = out["partly full"]
			}
			cl.bins++
			cl.mean += res.Forecasts.Mean[0][b-res.Forecasts.From][k]
			cl.rate += evRate / 12
			cl.served += float64(c.Served)
			cl.truth += float64(c.TurnedAway)
			cl.est += unmet[b-from][k].Mean
		}
	}
	return out
}

// TestLongEVTurnedAwayCause proves on a simulated case whose demand is
// known (evConstantRate) why the drivers turned away were overestimated,
// and that the fix removes most of it. As TestLongEVCharging ran before
// (the hyperparameters fitted on examples/ev-5min's garage, every site-bin
// with a full moment censored), the excess lies in the bins a site was
// full throughout: there the filtered latent mean is well above the
// known rate, because the bins in which a site filled up are picked out
// by the arrivals that filled it, and, censored at their served count,
// tell the filter that demand was high just before each full spell,
// which it carries into the spell's unobserved bins. With the
// hyperparameters learned on the data and only bins full for more than
// half their length censored (charging.Table.CensorAbove), the latent
// mean on full spells is near the rate and the total near the truth,
// with per site-day intervals that cover. About 53 s of CPU (66–125 s
// wall, nice'd, on the shared 2-core machine).
func TestLongEVTurnedAwayCause(t *testing.T) {
	if os.Getenv("DCGPD_LONG") != "1" {
		t.Skip("long mode: DCGPD_LONG=1 runs it (CI does)")
	}
	const days, trainDays = 10, 3
	from := trainDays * 288
	cases := []struct {
		name  string
		learn bool
		frac  float64
	}{{"before: fitted on the example, censored at any full moment", false, 0}, {"after: learned, censored above half the bin", true, evCensorFraction}}
	var ratios, spells, covs []float64
	var ns []int
	var record strings.Builder
	for _, c := range cases {
		tb := evConstantRate(t, days)
		tb.CensorAbove(c.frac)
		res := evBacktest(t, tb, trainDays, c.learn)
		r := evTurnedAway(t, tb, res, from)
		cls := evClasses(t, tb, res, from)
		for _, name := range []string{"free", "partly full", "full throughout"} {
			cl := cls[name]
			line := fmt.Sprintf("%s, %d %s site-bins: latent mean %.1f against the rate's %.1f (%.3f times); %.0f served; turned away %.1f estimated, %.0f simulated",
				c.name, cl.bins, name, cl.mean, cl.rate, cl.mean/cl.rate, cl.served, cl.est, cl.truth)
			t.Log(line)
			record.WriteString(line + "\n")
		}
		t.Logf("%s: turned away over %s", c.name, r)
		fmt.Fprintf(&record, "%s: turned away over %s\n", c.name, r)
		full := cls["full throughout"]
		ratios, spells, covs = append(ratios, r.est/r.truth), append(spells, full.mean/full.rate), append(covs, r.coverage())
		ns = append(ns, r.n)
	}
	recordFigures(t, fmt.Sprintf("# simulated sites at a known constant rate, %d days, %d learned (go test ./test/ -run TestLongEVTurnedAwayCause in long mode)\n%s", days, trainDays, record.String()))
	// The cause is shown where, before the fix, both ratios are well
	// above 1; the fix holds where, after it, both are within a factor
	// 1.12 of 1 either way and the intervals cover (at least 0.9 less two
	// binomial standard errors).
	if spells[0] < 1.2 || ratios[0] < 1.2 {
		t.Errorf("before: the latent mean on full spells is %.3f times the rate and the total %.3f times the truth; the cause shown here (both above 1.2) is not what the model does", spells[0], ratios[0])
	}
	for _, x := range []float64{spells[1], ratios[1]} {
		if !(x >= 1/1.12 && x <= 1.12) {
			t.Errorf("after: the latent mean on full spells is %.3f times the rate and the total %.3f times the truth, want both within [1/1.12, 1.12]", spells[1], ratios[1])
			break
		}
	}
	if lo := nominalCoverageFloor(0.9, ns[1]); covs[1] < lo {
		t.Errorf("after: 90%% intervals per site-day cover %.3f of %d, below %.3f (0.9 less two standard errors)", covs[1], ns[1], lo)
	}
}
