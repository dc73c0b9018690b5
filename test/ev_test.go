package test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/diffusion"
	"github.com/dcgpd/dcgpd/internal/app/backtest"
	"github.com/dcgpd/dcgpd/internal/app/charging"
	"github.com/dcgpd/dcgpd/stream/csvio"
	"github.com/dcgpd/dcgpd/stream/evsupply"
	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// evSites are the three sites the EV examples and the ACN-derived run
// group a garage's chargers into: 250–400 m apart in Pasadena, with pools
// of 3, 3 and 2 chargers.
func evSites() []charging.Site {
	return []charging.Site{
		{Name: "site-north", Lat: 34.1395, Lon: -118.1270, Pool: 3},
		{Name: "site-centre", Lat: 34.1377, Lon: -118.1253, Pool: 3},
		{Name: "site-east", Lat: 34.1366, Lon: -118.1226, Pool: 2},
	}
}

// evProtocol: a turned-away driver tries one other site with
// probability 0.6 (weights exp(−d²/(2·400²)), d in metres), else gives up.
var evProtocol = charging.Protocol{Divert: 0.6, Lengthscale: 400, Seed: 1}

// ev5minExample builds examples/ev-5min: two weeks of simulated sessions
// on 42 chargers (charging.DefaultSynthConfig, 14 days from Monday
// 2024-05-06, 30 weekday arrivals a day) grouped into evSites under
// evProtocol, in 5-minute bins, a site-bin censored where the site was
// full for more than half of it (evCensorFraction, the daemon's default
// censor_fraction).
func ev5minExample() (*charging.Table, error) {
	o, cfg, err := ev5minOutcome()
	if err != nil {
		return nil, err
	}
	tb, err := o.Bins(cfg.Start, 5*time.Minute, cfg.Days*288)
	if err != nil {
		return nil, err
	}
	tb.CensorAbove(evCensorFraction)
	return tb, nil
}

// ev5minOutcome is examples/ev-5min's simulation: its sessions through
// evSites under evProtocol, and the synthesis's configuration.
func ev5minOutcome() (*charging.Outcome, charging.SynthConfig, error) {
	cfg := charging.DefaultSynthConfig()
	cfg.Days, cfg.PerDay = 14, 30
	ss, err := charging.Synthesize(cfg)
	if err != nil {
		return nil, cfg, err
	}
	n := charging.GroupChargers(charging.Chargers(ss), evSites())
	o, err := charging.Simulate(ss, n, evProtocol)
	return o, cfg, err
}

// TestEV5minExample checks that examples/ev-5min's data are what
// ev5minExample writes, and its evse.csv the served sessions' EVSE
// status (charging.Outcome.EVSEStatus) (DCGPD_UPDATE_EV=1 rewrites them).
func TestEV5minExample(t *testing.T) {
	tb, err := ev5minExample()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]func(*bytes.Buffer) error{
		"obs.csv":      func(b *bytes.Buffer) error { return tb.WriteObs(b) },
		"truth.csv":    func(b *bytes.Buffer) error { return tb.WriteTruth(b) },
		"products.csv": func(b *bytes.Buffer) error { return tb.WriteProducts(b) },
		"evse.csv": func(b *bytes.Buffer) error { // the EVSE status the example's OCPI server serves
			o, cfg, err := ev5minOutcome()
			if err != nil {
				return err
			}
			evs, err := o.EVSEStatus(cfg.Start)
			if err != nil {
				return err
			}
			return ocpi.WriteEvents(b, evs)
		},
	}
	for name, write := range files {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "examples", "ev-5min", name)
		if os.Getenv("DCGPD_UPDATE_EV") == "1" {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b.Bytes()) {
			t.Errorf("%s is not what ev5minExample writes (DCGPD_UPDATE_EV=1 go test -run TestEV5minExample ./test/ rewrites it)", path)
		}
	}
	var arrivals, served, turned, lost, censored, cells int
	for _, row := range tb.Cells {
		for _, c := range row {
			arrivals += c.Arrivals
			served += c.Served
			turned += c.TurnedAway
			lost += c.Lost
			cells++
			if c.Censored {
				censored++
			}
		}
	}
	t.Logf("%d cells, %d censored (%.1f%%); %d arrivals, %d served, %d turned away, %d lost", cells, censored, 100*float64(censored)/float64(cells), arrivals, served, turned, lost)
}

// acnSessions is ACN-Data's Caltech garage, May to September 2021 (read
// only, never shipped: its terms are ACN-Data's), beside the repository;
// DCGPD_EV_SESSIONS names another copy.
func acnSessions() string {
	if p := os.Getenv("DCGPD_EV_SESSIONS"); p != "" {
		return p
	}
	return "../../shared/data-raw/acn_caltech_ev_2021/sessions.csv"
}

// evCensorFraction: examples/ev-5min and the ACN-derived run censor a
// site-bin where the site was full for more than half of it
// (charging.Table.CensorAbove): the daemon's default censor_fraction.
var evCensorFraction = evsupply.DefaultConfig().CensorFraction

// evHorizons are the horizons the EV backtest scores: 5, 15, 30 and 60
// minutes and one day of 5-minute bins.
var evHorizons = []int{1, 3, 6, 12, 288}

// TestLongEVCharging is the EV must-show on real arrivals: ACN-Data's
// 2,114 Caltech sessions, the chargers grouped into evSites under
// evProtocol (docs/ev-charging.md), in 5-minute bins, a site-bin
// censored where the site was full for more than half of it
// (evCensorFraction); the kernels of examples/ev-5min with their
// hyperparameters learned on the first 7 days (as `dcgpd fit` on a
// site's history), streamed through the daemon's runner from 23 Aug 2021
// (daily re-smooths of 576 bins) and scored from 30 Aug to 12 Sep,
// horizons 1, 3, 6, 12 and 288 bins, against the baselines on all and on
// censored cells; the nowcast of the bins in which a site was full at
// some moment; then the drivers turned away per site and day
// (cvi.UnmetDemand on the filtered latent demand, evTurnedAway) against
// the simulation's count, with 90% intervals. It asserts the forecasts'
// RMSE on all cells at or below the best baseline's at every horizon;
// the published realised demand's RMSE below the observed value's on the
// censored cells and on all full site-bins; and the turned-away estimate
// per site-day as issue 28 asked (evLostMustShow): nearer the truth than
// the data's implicit 0, intervals that cover, a total within 35% of the
// truth either way. Its figures are recorded in
// testdata/golden/TestLongEVCharging.golden. It logs what is
// not met (the latent mean on full bins; censored-cell forecasts), each
// beside an in-sample rate by 5-minute slot (evSlotRate) that shows why.
// About 75 s of CPU (75–175 s wall on the shared machine, nice'd).
func TestLongEVCharging(t *testing.T) {
	if os.Getenv("DCGPD_LONG") != "1" {
		t.Skip("long mode: DCGPD_LONG=1 runs it (CI does)")
	}
	path := acnSessions()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("SKIPPED: the ACN-Data sessions are not here (%v); they are read from ../shared (or DCGPD_EV_SESSIONS) and never shipped", err)
	}
	ss, err := charging.ReadSessions(f, path)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	n := charging.GroupChargers(charging.Chargers(ss), evSites())
	out, err := charging.Simulate(ss, n, evProtocol)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2021, 8, 23, 0, 0, 0, 0, time.UTC)
	const days, trainDays = 21, 7
	tb, err := out.Bins(start, 5*time.Minute, days*288)
	if err != nil {
		t.Fatal(err)
	}
	tb.CensorAbove(evCensorFraction)
	var obsCSV, truthCSV, prodCSV bytes.Buffer
	for _, w := range []error{tb.WriteObs(&obsCSV), tb.WriteTruth(&truthCSV), tb.WriteProducts(&prodCSV)} {
		if w != nil {
			t.Fatal(w)
		}
	}
	obs, err := csvio.ReadObs(&obsCSV, "acn obs")
	if err != nil {
		t.Fatal(err)
	}
	prods, err := csvio.ReadProducts(&prodCSV, "acn products")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Load("../examples/ev-5min/model.toml")
	if err != nil {
		t.Fatal(err)
	}
	learn := true // on the first trainDays, as `dcgpd fit` on a site's history
	sp.Fit.Learn = &learn
	truth := truthCSV.String()
	rs := config.DefaultModelConfig().Resmooth
	rs.EveryBins, rs.Window = 288, 576
	o := backtest.Options{Spec: sp, Obs: obs, Products: prods, Bin: 5 * time.Minute, Origin: start,
		EvalFrom: start.Add(trainDays * 24 * time.Hour), Horizon: 288, Horizons: evHorizons, Weeks: 2, Resmooth: &rs,
		Tail:  (days - trainDays) * 288, // keep every evaluated origin's estimates
		Truth: func(g *backtest.Grid) error { return backtest.ReadTruth(strings.NewReader(truth), "acn truth", g) }}
	res, err := o.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := res.Report.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("learned in %.1fs, streamed in %.1fs\n%s", res.Learn.Seconds(), res.Stream.Seconds(), table.String())
	evCensoring(t, tb, trainDays*288)
	evForecastMustShow(t, res.Report)
	evFullNowcast(t, tb, res, trainDays*288)
	r := evLostMustShow(t, tb, res, trainDays*288)
	recordFigures(t, fmt.Sprintf("# ACN-derived sites, 5-minute bins, %d days learned, %d scored (go test ./test/ -run TestLongEVCharging in long mode)\n%s\n# turned away per site-day\n%s\n", trainDays, days-trainDays, table.String(), r))
}

// evCensoring logs how censored the evaluated span is.
func evCensoring(t *testing.T, tb *charging.Table, from int) {
	var cells, censored, arrivals, turned, lost int
	for _, row := range tb.Cells[from:] {
		for _, c := range row {
			cells++
			arrivals += c.Arrivals
			turned += c.TurnedAway
			lost += c.Lost
			if c.Censored {
				censored++
			}
		}
	}
	t.Logf("evaluated span: %d cells, %d censored (%.1f%%); %d arrivals, %d turned away, %d of them lost", cells, censored, 100*float64(censored)/float64(cells), arrivals, turned, lost)
	if turned == 0 {
		t.Fatal("nobody was turned away: the pools never filled and the test checks nothing")
	}
}

// evForecastMustShow asserts the forecasts' RMSE at or below the best
// baseline's at every horizon on all cells, and reports the censored
// cells and the nowcast.
func evForecastMustShow(t *testing.T, rep *backtest.Report) {
	for _, sub := range []string{backtest.All, backtest.Censored} {
		for _, h := range evHorizons {
			m := rep.Find(backtest.ModelName, sub, h)
			if m == nil {
				t.Fatalf("no %s row at h=%d", sub, h)
			}
			best, bestName := math.Inf(1), ""
			for _, b := range baselineNames {
				if r := rep.Find(b, sub, h); r != nil && r.Score.N > 0 && r.Score.RMSE() < best {
					best, bestName = r.Score.RMSE(), b
				}
			}
			verdict := "at or below"
			if m.Score.RMSE() > best {
				verdict = "ABOVE"
			}
			t.Logf("%s h=%d: RMSE %.4f %s the best baseline's %.4f (%s); 90%% coverage %.3f over %d cells", sub, h, m.Score.RMSE(), verdict, best, bestName, m.Score.Coverage(), m.Score.N)
			if sub == backtest.All && m.Score.RMSE() > best {
				t.Errorf("all cells h=%d: RMSE %.4f above the best baseline's %.4f (%s)", h, m.Score.RMSE(), best, bestName)
			}
		}
	}
	for _, name := range []string{backtest.ModelName, backtest.LatentName, backtest.ObservedName} {
		if r := rep.Find(name, backtest.Censored, 0); r != nil && r.Score.N > 0 {
			t.Logf("censored-bin nowcast (%d cells), %s: RMSE %.4f, 90%% coverage %.3f", r.Score.N, name, r.Score.RMSE(), r.Score.Coverage())
		}
	}
	// The realised demand the daemon publishes (demand) against the
	// censored observation, on the censored cells served at least once.
	model, observed := rep.Find(backtest.ModelName, backtest.Censored, 0), rep.Find(backtest.ObservedName, backtest.Censored, 0)
	if model == nil || observed == nil || model.Score.N == 0 {
		t.Fatal("no censored-cell nowcast scored")
	}
	if model.Score.RMSE() >= observed.Score.RMSE() {
		t.Errorf("censored cells: realised-demand RMSE %.4f not below the observed value's %.4f", model.Score.RMSE(), observed.Score.RMSE())
	}
}

// evFullNowcast scores, over the bins in which a site was full (observed
// or not: a full bin with nobody served is sent unobserved), the filtered
// latent mean and the realised demand against the site's arrivals, next
// to the served count an operator sees.
func evFullNowcast(t *testing.T, tb *charging.Table, res *backtest.Result, from int) {
	fc := res.Forecasts
	rate := evSlotRate(tb, from)
	var n, nc int
	var seLatent, seDemand, seObserved, seRate, seRateC, seZeroC, arrC, rateC float64
	for b := from; b < len(tb.Cells); b++ {
		o := b - fc.From
		for k, c := range tb.Cells[b] {
			if !(c.FullFraction > 0) || math.IsNaN(fc.Mean[0][o][k]) || math.IsNaN(fc.Demand[o][k]) {
				continue
			}
			truth := float64(c.Arrivals)
			n++
			seLatent += sq(math.Max(fc.Mean[0][o][k], 0) - truth)
			seDemand += sq(math.Max(fc.Demand[o][k], 0) - truth)
			seObserved += sq(float64(c.Served) - truth)
			seRate += sq(rate(b, k) - truth)
			if c.Censored && c.Served > 0 {
				nc++
				seRateC += sq(rate(b, k) - truth)
				seZeroC += truth * truth
				arrC += truth
				rateC += rate(b, k)
			}
		}
	}
	rl, rd, ro := math.Sqrt(seLatent/float64(n)), math.Sqrt(seDemand/float64(n)), math.Sqrt(seObserved/float64(n))
	t.Logf("nowcast of the %d full site-bins: latent mean RMSE %.4f, realised demand %.4f, served count %.4f; the in-sample rate by site and 5-minute slot of the day (weekdays, weekends) %.4f",
		n, rl, rd, ro, math.Sqrt(seRate/float64(n)))
	t.Logf("on the %d censored cells that served someone: %.0f arrivals against that rate's %.2f; its RMSE %.4f, a forecast of 0's %.4f",
		nc, arrC, rateC, math.Sqrt(seRateC/float64(nc)), math.Sqrt(seZeroC/float64(nc)))
	if rd >= ro {
		t.Errorf("full site-bins: realised-demand RMSE %.4f not below the served count's %.4f", rd, ro)
	}
	if rl >= ro {
		t.Logf("must-show NOT MET by the latent mean: on the full site-bins its RMSE %.4f is not below the served count's %.4f (the realised demand's is)", rl, ro)
	}
}

// evSlotRate is the mean arrivals per site and 5-minute slot of the day,
// weekdays and weekends apart, over the bins from from on: an in-sample
// rate no forecast can know, the best a rate does on these bins.
func evSlotRate(tb *charging.Table, from int) func(b, k int) float64 {
	key := func(b, k int) [3]int {
		at := tb.BinStart(b)
		we := 0
		if wd := at.Weekday(); wd == time.Saturday || wd == time.Sunday {
			we = 1
		}
		return [3]int{k, at.Hour()*12 + at.Minute()/5, we}
	}
	sum, cnt := map[[3]int]float64{}, map[[3]int]float64{}
	for b := from; b < len(tb.Cells); b++ {
		for k, c := range tb.Cells[b] {
			sum[key(b, k)] += float64(c.Arrivals)
			cnt[key(b, k)]++
		}
	}
	return func(b, k int) float64 { return sum[key(b, k)] / cnt[key(b, k)] }
}

func sq(x float64) float64 { return x * x }

// evUnmet is cvi.UnmetDemand on the filtered latent demand of every
// evaluated bin (from from on), unmet[b-from][k]: the model's drivers
// turned away where site k was full.
func evUnmet(t *testing.T, tb *charging.Table, res *backtest.Result, from int) [][]cvi.Unmet {
	t.Helper()
	g, fc := res.Grid, res.Forecasts
	np := len(g.Products)
	feats := make([][]float64, np)
	for k, s := range tb.Sites {
		feats[k] = []float64{s.Lat, s.Lon}
	}
	ell, sink := res.Model.Model.Diffusion.Lengthscale, res.Model.Model.Diffusion.Sink
	tr, err := diffusion.NewTransition(feats, ell, sink, diffusion.GraphOptions{Metric: diffusion.GreatCircle})
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]cvi.Obs, np)
	dm, dv := make([]float64, np), make([]float64, np)
	out := make([][]cvi.Unmet, g.Len()-from)
	for b := from; b < g.Len(); b++ {
		o := b - fc.From
		for k := 0; k < np; k++ {
			obs[k] = cvi.Obs{Y: g.Y[b][k], Supply: g.Supply[b][k], Censored: g.Censored[b][k]}
			dm[k], dv[k] = fc.Mean[0][o][k], fc.Var[0][o][k]
		}
		out[b-from] = make([]cvi.Unmet, np)
		if err := cvi.UnmetDemand(tr, obs, dm, dv, out[b-from]); err != nil {
			t.Fatal(err)
		}
		for k, u := range out[b-from] {
			if math.IsNaN(u.Mean) {
				t.Fatalf("bin %d product %d: turned-away estimate is NaN (latent mean %v var %v)", b, k, dm[k], dv[k])
			}
		}
	}
	return out
}

// evLost is the drivers turned away that the filtered latent demand
// implies (Σ E[max(f − u, 0)] over the full bins, cvi.UnmetDemand) per
// site and whole evaluated day, against the simulation's count. Its 90%
// interval adds to the posterior variance of the day's sum the count's
// own scatter, taken as Poisson (the variance of a count of arrivals is
// its mean). The bins' errors are taken as fully correlated within the
// day (the sum's standard deviation is the sum of the bins'): a full
// spell's bins are unobserved and share one error, the filter's level
// when the spell began; bins taken as independent (the variances summed)
// give intervals too narrow, whose coverage is logged beside
// (covIndep).
type evLost struct {
	n, covered, coveredIndep int
	// rmse is per site-day; rmseZero that of the data's implicit 0.
	rmse, rmseZero float64
	// est, plugIn (max(E f − u, 0)) and truth are totals.
	est, plugIn, truth float64
	lines              []string
}

func evTurnedAway(t *testing.T, tb *charging.Table, res *backtest.Result, from int) evLost {
	t.Helper()
	g, fc := res.Grid, res.Forecasts
	np := len(g.Products)
	ndays := (g.Len() - from) / 288
	type acc struct{ mean, vr, sd, lost, plugIn, truth, truthLost float64 }
	days := make([][]acc, ndays)
	for d := range days {
		days[d] = make([]acc, np)
	}
	unmet := evUnmet(t, tb, res, from)
	for b := from; b < from+ndays*288; b++ {
		o := b - fc.From
		d := (b - from) / 288
		for k := 0; k < np; k++ {
			u := unmet[b-from][k]
			a := &days[d][k]
			a.mean += u.Mean
			a.vr += u.Var
			a.sd += math.Sqrt(u.Var)
			a.lost += u.Lost
			if u.Mean > 0 || g.Censored[b][k] {
				a.plugIn += math.Max(fc.Mean[0][o][k]-g.Supply[b][k], 0)
			}
			c := tb.Cells[b][k]
			a.truth += float64(c.TurnedAway)
			a.truthLost += float64(c.Lost)
		}
	}
	var r evLost
	var se, seZero float64
	for d := range days {
		for k, a := range days[d] {
			sd := math.Sqrt(a.sd*a.sd + a.mean)
			lo, hi := math.Max(a.mean-1.645*sd, 0), a.mean+1.645*sd
			in := a.truth >= lo && a.truth <= hi
			if in {
				r.covered++
			}
			if sdi := math.Sqrt(a.vr + a.mean); math.Abs(a.truth-a.mean) <= 1.645*sdi || a.truth <= a.mean && a.mean-1.645*sdi <= 0 {
				r.coveredIndep++
			}
			r.n++
			se += (a.mean - a.truth) * (a.mean - a.truth)
			seZero += a.truth * a.truth
			r.est += a.mean
			r.plugIn += a.plugIn
			r.truth += a.truth
			r.lines = append(r.lines, fmt.Sprintf("day %2d %-12s turned away %5.2f [%5.2f, %5.2f] (lost %5.2f), simulated %2.0f (lost %2.0f)%s",
				d, g.Products[k], a.mean, lo, hi, a.lost, a.truth, a.truthLost, map[bool]string{false: "  outside", true: ""}[in]))
		}
	}
	r.rmse, r.rmseZero = math.Sqrt(se/float64(r.n)), math.Sqrt(seZero/float64(r.n))
	return r
}

// coverage is the part of the site-days whose interval covers the truth.
func (r evLost) coverage() float64 { return float64(r.covered) / float64(r.n) }

func (r evLost) String() string {
	return fmt.Sprintf("%d site-days: estimated %.1f in all (the plug-in max(E f − u, 0) %.1f), simulated %.0f (%.2f times); RMSE %.3f (the observed data's implicit estimate, 0: %.3f); 90%% intervals cover %d (%.3f; bins taken as independent: %d, %.3f)",
		r.n, r.est, r.plugIn, r.truth, r.est/r.truth, r.rmse, r.rmseZero, r.covered, r.coverage(), r.coveredIndep, float64(r.coveredIndep)/float64(r.n))
}

// evLostMustShow checks the turned-away estimate per site-day (evLost)
// against the simulation, as issue 28 asked: nearer the truth than the
// data's implicit 0 (RMSE), 90% intervals that cover (at least 0.9 less
// two binomial standard errors of the site-days' count, so a calibrated
// interval passes), and a total within a factor 1.35 of the truth either
// way (an unbiased estimate passes). It returns what it checked.
func evLostMustShow(t *testing.T, tb *charging.Table, res *backtest.Result, from int) evLost {
	r := evTurnedAway(t, tb, res, from)
	t.Logf("turned away per site-day:\n%s", strings.Join(r.lines, "\n"))
	t.Logf("turned away per site-day over %s", r)
	if r.rmse >= r.rmseZero {
		t.Errorf("turned-away RMSE per site-day %.3f, not below the observed data's (0 turned away) %.3f", r.rmse, r.rmseZero)
	}
	if cov, lo := r.coverage(), nominalCoverageFloor(0.9, r.n); cov < lo {
		t.Errorf("turned away per site-day: 90%% intervals cover %.3f of %d, below %.3f (0.9 less two standard errors)", cov, r.n, lo)
	}
	if ratio := r.est / r.truth; !(ratio >= 1/1.35 && ratio <= 1.35) {
		t.Errorf("turned away in all: estimated %.1f, %.2f times the simulated %.0f, want within [1/1.35, 1.35]", r.est, ratio, r.truth)
	}
	return r
}

// nominalCoverageFloor is the least coverage of n intervals at nominal
// level p that a calibrated interval reaches but in about 2.5% of
// samples: p less two binomial standard errors.
func nominalCoverageFloor(p float64, n int) float64 {
	return p - 2*math.Sqrt(p*(1-p)/float64(n))
}
