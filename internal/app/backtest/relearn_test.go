package backtest

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/csvio"
)

// shiftObs is two products' hourly demand from 2024-01-15 to 2024-03-10, a
// daily profile whose level falls by 40% from February 12, censored at a
// supply now and then (fixed seed), as a user's OBS file would give it,
// and the truth (the demand before censoring) by row.
func shiftObs() (*csvio.Obs, []float64, time.Time) {
	rng := rand.New(rand.NewPCG(29, 1))
	start := time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)
	shift := time.Date(2024, 2, 12, 0, 0, 0, 0, time.UTC)
	o := &csvio.Obs{Name: "shift", Kind: csvio.Timestamp}
	var truth []float64
	for t := start; t.Before(time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC)); t = t.Add(time.Hour) {
		level := 1.0
		if !t.Before(shift) {
			level = 0.6
		}
		for k, p := range []string{"a", "b"} {
			h := float64(t.Hour())
			y := math.Max(0, level*(10+6*math.Sin(2*math.Pi*h/24+float64(k)))+rng.NormFloat64())
			r := csvio.Row{Line: len(o.Rows) + 2, TimeText: t.Format(time.RFC3339), Time: float64(t.Unix()) / 3600, Product: p, Demand: y, Supply: math.Inf(1)}
			if rng.Float64() < 0.1 {
				r.Supply = math.Floor(y * 0.8)
				r.Demand, r.Censored = r.Supply, true
			}
			o.Rows, truth = append(o.Rows, r), append(truth, y)
		}
	}
	return o, truth, start
}

// TestBacktestRelearnsByMonth: Options.Run runs the daemon's re-learning
// (the runner's own: each re-smooth re-learns on its window) when the
// re-smoothing asks for it, starts the stream Warmup bins before the
// evaluation, scores by calendar month of the forecast's bin with the
// months' cells adding up to the whole span's, and keeps only the last
// Tail origins' forecasts.
func TestBacktestRelearnsByMonth(t *testing.T) {
	obs, truth, start := shiftObs()
	setTruth := func(g *Grid) error {
		for i, r := range obs.Rows {
			t, _ := rowTime(r.Time)
			b, _ := g.Index(t)
			for k, p := range g.Products {
				if p == r.Product {
					g.Truth[b][k] = truth[i]
				}
			}
		}
		return nil
	}
	prods := csvio.FromObs(obs)
	sp := spec.Spec{Model: spec.Model{Likelihood: "gaussian", NoiseVariance: 1, Temporal: []spec.Temporal{
		{Kernel: "matern32", Variance: 4, Lengthscale: 12},
		{Kernel: "periodic", Variance: 20, Lengthscale: 1, Period: 24, Harmonics: 3}}}}
	evalFrom := start.Add(14 * 24 * time.Hour)
	const warmup, every, tail = 48, 72, 30
	run := func(relearn bool) *Result {
		rs := config.DefaultModelConfig().Resmooth
		rs.EveryBins, rs.Window, rs.Relearn = every, 144, relearn
		o := Options{Spec: sp, Obs: obs, Products: prods, Bin: time.Hour, Origin: time.Unix(0, 0).UTC(), EvalFrom: evalFrom,
			Horizon: 24, Horizons: []int{1, 24}, Resmooth: &rs, ByMonth: true, Warmup: warmup, Tail: tail, Truth: setTruth}
		res, err := o.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res, frozen := run(true), run(false)
	g := res.Grid
	from, _ := g.Index(evalFrom)
	// The runner re-smooths every `every` bins from the first streamed.
	want := (g.Len() - (from - warmup)) / every
	out := res.Forecasts.Resmooths
	if got := out["swapped"] + out["kept_hyperparameters"]; got < want-1 || got > want || out["failed"]+out["abandoned"] > 0 {
		t.Errorf("re-smooth outcomes %v; want %d or %d re-learns, none failed", out, want-1, want)
	}
	if n := frozen.Forecasts.Resmooths["kept_hyperparameters"]; n != 0 {
		t.Errorf("without relearn %d re-learns were rejected: it re-learned", n)
	}
	// Re-learning changes what is published.
	a, b := res.Report.Find(ModelName, All, 24), frozen.Report.Find(ModelName, All, 24)
	if a.Score.N != b.Score.N || a.Score.RMSE() == b.Score.RMSE() {
		t.Errorf("h=24 RMSE %v on %d cells re-learning, %v on %d not: re-learning changed nothing", a.Score.RMSE(), a.Score.N, b.Score.RMSE(), b.Score.N)
	}
	if len(res.Forecasts.Mean[1]) != tail || res.Forecasts.From != g.Len()-tail {
		t.Errorf("kept %d origins from %d, want the last %d", len(res.Forecasts.Mean[1]), res.Forecasts.From, tail)
	}
	checkMonths(t, res.Report, g, from)
	var csv strings.Builder
	if err := res.Report.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(csv.String(), "month,method,subset,horizon,n,") || !strings.Contains(csv.String(), "\n2024-02,dcgpd,all,24,") ||
		!strings.Contains(csv.String(), "\nall,em,censored,0,") {
		t.Errorf("CSV by month:\n%s", csv.String()[:min(600, csv.Len())])
	}
	var tbl strings.Builder
	if err := res.Report.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	t.Logf("re-smooths %v in %v\n%s", out, res.Forecasts.ResmoothTime, tbl.String())
}

// checkMonths: the report has the months of the scored cells, each row's
// cells and squared errors over the months add up to the whole span's,
// and a month's cells at a horizon are exactly the origins from `from`
// whose target bin lies in it (every cell here has a truth and every
// method a forecast).
func checkMonths(t *testing.T, r *Report, g *Grid, from int) {
	t.Helper()
	names := []string{}
	for _, p := range r.Periods {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "2024-01 2024-02 2024-03" {
		t.Fatalf("months %v", names)
	}
	for _, row := range r.Rows {
		var n int
		var se float64
		for i := range r.Periods {
			if x := r.Periods[i].Find(row.Method, row.Subset, row.Horizon); x != nil {
				n += x.Score.N
				se += x.Score.se
			}
		}
		if n != row.Score.N || math.Abs(se-row.Score.se) > 1e-9*row.Score.se {
			t.Errorf("%s %s h=%d: months add up to %d cells, SE %v; whole span %d, %v", row.Method, row.Subset, row.Horizon, n, se, row.Score.N, row.Score.se)
		}
	}
	for _, p := range r.Periods {
		for _, h := range r.Horizons {
			want := 0
			for o := from; o+h < g.Len(); o++ {
				if bt := g.BinStart(o + h); bt.Year() == p.Start.Year() && bt.Month() == p.Start.Month() {
					want += len(g.Products)
				}
			}
			if x := p.Find(ModelName, All, h); x == nil || x.Score.N != want {
				t.Errorf("%s h=%d: %v, want %d cells", p.Name, h, x, want)
			}
		}
	}
}
