package test

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/internal/app/backtest"
	"github.com/dcgpd/dcgpd/internal/app/synth"
	"github.com/dcgpd/dcgpd/internal/geo"
)

// The year backtest: January and February 2018 learned, March to December
// scored, re-learning on.
var (
	yearTrain = time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC)
	yearEval  = time.Date(2018, 3, 1, 0, 0, 0, 0, time.UTC)
	yearEnd   = time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)
)

// yearWarmup is how many bins before March the daemon streams: it is
// started on February 22 with the model fitted on January–February, as an
// operator starts one replaying the last week.
const yearWarmup = 168

// yearResmooth is the re-smoothing a daemon that runs for months runs:
// the daemon's defaults (every 24 bins, a window of 168) with re-learning
// on.
func yearResmooth() config.ResmoothConfig {
	rs := config.DefaultModelConfig().Resmooth
	rs.Relearn = true
	return rs
}

// yearCriteria are what TestLongCitiBikeYear asserts on a cluster.
type yearCriteria struct {
	// overallRMSE, overallCRPS: the model's RMSE and CRPS over the ten
	// months at most this multiple of the best baseline's, at every
	// horizon.
	overallRMSE, overallCRPS float64
	// monthsRMSE, monthsCRPS: of the ten months, at least this many at or
	// below the best baseline's RMSE (CRPS) at every horizon; and never
	// above monthMax times it.
	monthsRMSE, monthsCRPS int
	monthMax               float64
	// covLo, covHi bound the 90% coverage in every month at every
	// horizon.
	covLo, covHi float64
	// nowcast: the realised demand's RMSE on censored cells below EM's and
	// PD's.
	nowcast bool
}

// yearMustShow is what TestLongCitiBikeYear asserts on every cluster it
// runs: issue 29's must-show (over the ten months at or below the best
// baseline in RMSE and CRPS at every horizon; in at least 9 of the 10
// months, and never above 1.03 times it; 90% coverage in [0.85, 0.95] in
// every month; a censored-cell nowcast below EM's and PD's). The figures
// each cluster achieved are recorded in
// testdata/golden/TestLongCitiBikeYear/<cluster>.golden.
var yearMustShow = yearCriteria{overallRMSE: 1, overallCRPS: 1, monthsRMSE: 9, monthsCRPS: 9, monthMax: 1.03, covLo: 0.85, covHi: 0.95, nowcast: true}

// yearRun are the clusters TestLongCitiBikeYear runs: citibike-504 alone
// (one cluster takes about 16 minutes of CPU, 955 s in a CPU profile,
// most of it the Kalman smoothing of the 312 re-smooths with re-learning
// and re-estimation; the three take about 48, over CI's budget beside the
// other long tests); DCGPD_CITIBIKE_YEAR_ALL=1 runs the four of
// yearClusters (three side by side, -test.parallel 3, took 42 minutes
// of wall time on the shared 2-core machine beside an August backtest,
// nice'd); pick one with -test.run 'TestLongCitiBikeYear/NAME$'.
func yearRun(t *testing.T) []synth.BikeCluster {
	all := yearClusters(t)
	if os.Getenv("DCGPD_CITIBIKE_YEAR_ALL") == "1" {
		return all
	}
	return all[1:2]
}

// yearClusters are the year test's four groupings of ten stations: the
// held-out benchmark's first and third clusters (synth.NeighbourClusters(3,
// 10): around stations 499 and 504), the ten stations nearest station 405
// (Washington St & Gansevoort St), with the three stations (405, 482,
// 168) that are in none of the benchmark's clusters, and (issue 37) the
// ten stations nearest Washington Square Park, citibike-wsq, whose rule
// was written down before any of its scores was seen.
func yearClusters(t *testing.T) []synth.BikeCluster {
	t.Helper()
	st, err := synth.ReadBikeStations(citibikeDir)
	if err != nil {
		t.Fatal(err)
	}
	bench, err := synth.NeighbourClusters(st, 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	return []synth.BikeCluster{bench[0], bench[2], nearestStations(t, st, 405, 10),
		nearestPlace(st, "citibike-wsq", washingtonSquareLat, washingtonSquareLon, 10)}
}

// Washington Square Park (the arch), the place the fourth grouping is
// built around. Its rule was written down before any of its scores was
// seen (issue 37): the ten stations of stations.csv nearest this point.
const (
	washingtonSquareLat = 40.7308
	washingtonSquareLon = -73.9973
)

// nearestPlace is the cluster of the k stations nearest the point (lat,
// lon), nearest first (ties to the lower ID), named name.
func nearestPlace(st []synth.BikeStation, name string, lat, lon float64, k int) synth.BikeCluster {
	idx := make([]int, len(st))
	for i := range idx {
		idx[i] = i
	}
	dist := func(i int) float64 { return geo.Haversine(lat, lon, st[i].Lat, st[i].Lon) }
	sort.SliceStable(idx, func(a, b int) bool {
		da, db := dist(idx[a]), dist(idx[b])
		return da < db || da == db && st[idx[a]].ID < st[idx[b]].ID
	})
	c := synth.BikeCluster{Name: name}
	for _, i := range idx[:min(k, len(idx))] {
		c.Stations = append(c.Stations, st[i].ID)
	}
	return c
}

// nearestStations is the cluster of the k stations nearest station id
// (itself first; ties to the lower ID), named after it.
func nearestStations(t *testing.T, st []synth.BikeStation, id, k int) synth.BikeCluster {
	t.Helper()
	at := -1
	for i, s := range st {
		if s.ID == id {
			at = i
		}
	}
	if at < 0 || k > len(st) {
		t.Fatalf("station %d with %d neighbours: not in the %d stations", id, k-1, len(st))
	}
	idx := make([]int, len(st))
	for i := range idx {
		idx[i] = i
	}
	dist := func(i int) float64 { return geo.Haversine(st[at].Lat, st[at].Lon, st[i].Lat, st[i].Lon) }
	sort.SliceStable(idx, func(a, b int) bool {
		da, db := dist(idx[a]), dist(idx[b])
		return da < db || da == db && st[idx[a]].ID < st[idx[b]].ID
	})
	c := synth.BikeCluster{Name: fmt.Sprintf("citibike-%d", id)}
	for _, i := range idx[:k] {
		c.Stations = append(c.Stations, st[i].ID)
	}
	return c
}

// TestLongCitiBikeYear is issue 29's year backtest on real data: each of
// yearRun's clusters with the held-out benchmark's censoring
// (experiment.CitiBikeCluster: daily restock, unmet pickups moved 300 m,
// sink 0.2), the shipped model learned on January–February 2018, the
// daemon's runner started a week before March with re-learning on
// (yearResmooth), March to December 2018 scored per calendar month. It
// asserts yearMustShow on each cluster and records its table in
// testdata/golden (recordFigures). The clusters run in parallel; one
// takes about 16 minutes of CPU (the runner's re-smooths are serial, each
// one's smoothing uses both cores). citibike-405 does not meet the
// must-show's coverage in December (docs/forecasting.md has its figures;
// issue 37 is open for it). Where the data are present:
//
//	go test -c -o /tmp/bt.test ./test/ && cd test && DCGPD_LONG=1 /tmp/bt.test -test.run TestLongCitiBikeYear -test.v -test.timeout 60m
//
// To compare variants, as TestLongBacktestCitiBike: DCGPD_CITIBIKE_MODEL=
// FILE runs another model file and DCGPD_CITIBIKE_SPAN=TRAIN,EVAL,END
// other months (the months' count is then not checked); -test.run
// 'TestLongCitiBikeYear/citibike-405' one cluster. DCGPD_CITIBIKE_RELEARN=0
// turns re-learning off (about a third of the CPU; a comparison of
// variants, not the protocol: nothing is recorded).
func TestLongCitiBikeYear(t *testing.T) {
	requireLongMode(t)
	skipWithoutCitiBike(t)
	model := shippedBikeModel
	if m := os.Getenv("DCGPD_CITIBIKE_MODEL"); m != "" {
		model = m
	}
	train, eval, end, months := yearTrain, yearEval, yearEnd, 10
	if os.Getenv("DCGPD_CITIBIKE_SPAN") != "" {
		train, eval, end = citiBikeSpan(t)
		months = 0
	}
	for _, cl := range yearRun(t) {
		t.Run(cl.Name, func(t *testing.T) {
			t.Parallel()
			rs := yearResmooth()
			if os.Getenv("DCGPD_CITIBIKE_RELEARN") == "0" {
				rs.Relearn = false // a cheaper comparison; not the protocol the record is of
			}
			res := citiBikeBacktest(t, model, cl.Stations, train, eval, end, 0, func(o *backtest.Options) {
				o.Resmooth, o.Warmup, o.ByMonth = &rs, yearWarmup, true
			})
			var tbl strings.Builder
			if err := res.Report.WriteTable(&tbl); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %v (learn %.0fs, stream %.0fs; re-smooths %v, %.0fs):\n%s", cl.Name, cl.Stations, res.Learn.Seconds(), res.Stream.Seconds(),
				res.Forecasts.Resmooths, res.Forecasts.ResmoothTime.Seconds(), tbl.String())
			if model == shippedBikeModel && months > 0 && rs.Relearn { // the protocol the record is of
				recordFigures(t, fmt.Sprintf("# %s %v: learned on %s to %s, scored %s to %s by month (go test ./test/ -run 'TestLongCitiBikeYear/%s' in long mode)\n%s",
					cl.Name, cl.Stations, train.Format(time.DateOnly), eval.Format(time.DateOnly), eval.Format(time.DateOnly), end.Format(time.DateOnly), cl.Name, tbl.String()))
			}
			checkYear(t, res.Report, yearMustShow, months, t.Errorf)
		})
	}
}

// checkYear checks c on a year report with months (that many, if not
// 0), each shortfall reported by errorf, and logs a summary:
// the model's RMSE and CRPS over the best baseline's overall and per
// month (worst month, months at or below), the coverage range and the
// nowcast of censored cells.
func checkYear(t *testing.T, r *backtest.Report, c yearCriteria, months int, errorf func(string, ...any)) {
	t.Helper()
	if months > 0 && len(r.Periods) != months {
		t.Fatalf("%d months scored, want %d", len(r.Periods), months)
	}
	baselines := r.Methods[1:]
	metrics := []struct {
		name    string
		get     func(*backtest.Score) float64
		overall float64
		months  int
	}{{"RMSE", (*backtest.Score).RMSE, c.overallRMSE, c.monthsRMSE}, {"CRPS", (*backtest.Score).CRPS, c.overallCRPS, c.monthsCRPS}}
	ratio := func(find func(string, string, int) *backtest.Row, h int, get func(*backtest.Score) float64) (float64, string) {
		m := find(backtest.ModelName, backtest.All, h)
		best, bv := "", math.Inf(1)
		for _, b := range baselines {
			x := find(b, backtest.All, h)
			if x == nil || x.Score.N != m.Score.N {
				t.Fatalf("h=%d: %s not scored on the model's %d cells", h, b, m.Score.N)
			}
			if v := get(&x.Score); v < bv {
				best, bv = b, v
			}
		}
		return get(&m.Score) / bv, best
	}
	covLo, covHi := math.Inf(1), math.Inf(-1)
	for _, h := range r.Horizons {
		for _, mt := range metrics {
			all, best := ratio(r.Find, h, mt.get)
			worst, worstMonth, below := 0.0, "", 0
			for i := range r.Periods {
				p := &r.Periods[i]
				x, _ := ratio(p.Find, h, mt.get)
				if x <= 1 {
					below++
				}
				if x > worst {
					worst, worstMonth = x, p.Name
				}
			}
			t.Logf("h=%2d %s: %.3f of the best baseline's (%s) over the months; at or below it in %d of %d months; worst %.3f (%s)",
				h, mt.name, all, best, below, len(r.Periods), worst, worstMonth)
			if all > mt.overall {
				errorf("h=%d: %s %.3f of the best baseline's (%s) over the ten months, want at most %.3f", h, mt.name, all, best, mt.overall)
			}
			if below < mt.months || worst > c.monthMax {
				errorf("h=%d: %s at or below the best baseline's in %d months (want %d), worst %.3f in %s (want at most %.3f)",
					h, mt.name, below, mt.months, worst, worstMonth, c.monthMax)
			}
		}
		for i := range r.Periods {
			p := &r.Periods[i]
			cov := p.Find(backtest.ModelName, backtest.All, h).Score.Coverage()
			covLo, covHi = math.Min(covLo, cov), math.Max(covHi, cov)
			if !(cov >= c.covLo && cov <= c.covHi) {
				errorf("%s h=%d: 90%% coverage %.3f outside [%.2f, %.2f]", p.Name, h, cov, c.covLo, c.covHi)
			}
		}
	}
	t.Logf("90%% coverage per month and horizon: %.3f to %.3f", covLo, covHi)
	rows := map[string]*backtest.Row{}
	for _, m := range r.Nowcasters {
		rows[m] = r.Find(m, backtest.Censored, 0)
		if rows[m] == nil {
			t.Fatalf("no nowcast of censored cells by %s", m)
		}
	}
	nm, em, pd := rows[backtest.ModelName].Score, rows[backtest.EMName].Score, rows[backtest.PDName].Score
	t.Logf("nowcast of %d censored cells, RMSE: realised demand %.3f, latent mean %.3f, observed %.3f, EM %.3f, PD %.3f",
		nm.N, nm.RMSE(), rows[backtest.LatentName].Score.RMSE(), rows[backtest.ObservedName].Score.RMSE(), em.RMSE(), pd.RMSE())
	if c.nowcast && (nm.N != em.N || !(nm.RMSE() < em.RMSE()) || !(nm.RMSE() < pd.RMSE())) {
		errorf("nowcast of censored cells (%d, EM %d): realised demand RMSE %.3f, EM %.3f, PD %.3f", nm.N, em.N, nm.RMSE(), em.RMSE(), pd.RMSE())
	}
}
