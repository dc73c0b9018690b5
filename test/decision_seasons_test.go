package test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/app/backtest"
	"github.com/dcgpd/dcgpd/internal/app/synth"
	"github.com/dcgpd/dcgpd/internal/geo"
	"github.com/dcgpd/dcgpd/inventory"
)

// namedPlace is a landmark whose ten nearest stations form a cluster.
type namedPlace struct {
	name     string
	lat, lon float64
}

// decisionPlaces are the decision backtest's clusters, fixed by a rule
// written down before any of their scores was seen: the ten stations of
// stations.csv nearest (great circle) to each of three named places in
// Manhattan (a station may belong to more than one cluster).
var decisionPlaces = []namedPlace{
	{"union-square", 40.7359, -73.9906},
	{"city-hall", 40.7127, -74.0059},
	{"chelsea-market", 40.7424, -74.0060},
}

// decisionMonth is a held-out month and the two months learned before it.
type decisionMonth struct {
	name             string
	train, eval, end time.Time
}

func month(y int, m time.Month) time.Time { return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC) }

// decisionMonths are the scored months, one per season: spring (May),
// summer (August) and late autumn (November), each learned on the two
// months before it. No choice was made on them: the diagnosis behind the
// policy (docs/rebalancing.md) ran on April and October, which are only
// ever learned on.
var decisionMonths = []decisionMonth{
	{"2018-05", month(2018, 3), month(2018, 5), month(2018, 6)},
	{"2018-08", month(2018, 6), month(2018, 8), month(2018, 9)},
	{"2018-11", month(2018, 9), month(2018, 11), month(2018, 12)},
}

// stationsNearPlace returns the ids of the n stations nearest p.
func stationsNearPlace(st []synth.BikeStation, p namedPlace, n int) []int {
	s := append([]synth.BikeStation(nil), st...)
	sort.SliceStable(s, func(i, j int) bool {
		return geo.Haversine(p.lat, p.lon, s[i].Lat, s[i].Lon) < geo.Haversine(p.lat, p.lon, s[j].Lat, s[j].Lon)
	})
	ids := make([]int, 0, n)
	for _, b := range s[:min(n, len(s))] {
		ids = append(ids, b.ID)
	}
	return ids
}

// TestLongDecisionSeasons is issue 39's must-show on real data: on three
// clusters (the ten stations nearest Union Square, City Hall and Chelsea
// Market) and three held-out months (May, August and November 2018, each
// learned on the two months before), a pickups model and a returns model
// (the shipped bike model, learned on the history's censored counts)
// forecast each operating day (06:00 to 06:00) at 06:00, and every
// cluster-month must show that dcgpd's s* closes at least 30% of the gap
// between the historical mean's s* (HM(C1,P1,T3)) and hindsight, leaves
// no more unmet pickups per station-day than the historical mean's, and
// scores P(empty) and P(full) below the historical mean's Brier score at
// every h ≥ 3. No policy beats hindsight. Each cluster-month's tables are
// recorded in testdata/golden/TestLongDecisionSeasons/<cluster>-<month>.golden.
// The nine cluster-months run side by side up to -test.parallel.
//
// It runs only with DCGPD_DECISION_SEASONS=1 besides the long mode: the
// nine cluster-months take 1.5 to 3 hours on 2 cores, beyond CI's budget,
// and today it fails the must-show (issue 39 is open; the failures and
// their causes are in docs/rebalancing.md). TestLongCitiBikeDecision is
// the August run CI keeps.
func TestLongDecisionSeasons(t *testing.T) {
	requireLongMode(t)
	if os.Getenv("DCGPD_DECISION_SEASONS") == "" {
		t.Skip("SKIPPED: issue 39's nine cluster-months (1.5-3 h on 2 cores, failing its must-show today) run only with DCGPD_DECISION_SEASONS=1")
	}
	skipWithoutCitiBike(t)
	st, err := synth.ReadBikeStations(citibikeDir)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Load(shippedBikeModel)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range decisionMonths {
		for _, p := range decisionPlaces {
			ids := stationsNearPlace(st, p, 10)
			t.Run(p.name+"-"+m.name, func(t *testing.T) {
				t.Parallel()
				runDecisionMonth(t, sp, ids, m)
			})
		}
	}
}

// runDecisionMonth runs the decision backtest of one cluster-month,
// records its tables and asserts the must-show.
func runDecisionMonth(t *testing.T, sp spec.Spec, ids []int, m decisionMonth) {
	// One day more than the evaluation: the last operating day ends at
	// 06:00 after the month.
	d, transfer, err := backtest.CitiBikeStations(citibikeDir, ids, m.train, m.end.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	o := backtest.DecisionOptions{Spec: sp, Data: d, World: decisionWorld(transfer), EvalFrom: m.eval, End: m.end.Add(24 * time.Hour),
		DayStart: 6, Planner: inventory.DefaultConfig(), Horizons: []int{1, 3, 6, 12, 24}, Weeks: 4}
	began := time.Now()
	res, err := o.RunDecision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var tbl, cal, pr, rr strings.Builder
	if err := res.WriteDecisionTable(&tbl, t.Name()); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteCalibration(&cal); err != nil {
		t.Fatal(err)
	}
	_ = res.PickupsReport.WriteTable(&pr)
	_ = res.ReturnsReport.WriteTable(&rr)
	t.Logf("learn %.0f s, stream %.0f s, total %.0f s", res.Learn.Seconds(), res.Stream.Seconds(), time.Since(began).Seconds())
	recordFigures(t, fmt.Sprintf("# %v, learned on %s to %s, decided each day %s to %s (DCGPD_LONG=1 go test ./test/ -run '%s')\n%s\n%s\n# pickups forecasts\n%s\n# returns forecasts\n%s",
		ids, m.train.Format(time.DateOnly), m.eval.Format(time.DateOnly), m.eval.Format(time.DateOnly), m.end.Format(time.DateOnly), t.Name(),
		tbl.String(), cal.String(), pr.String(), rr.String()))
	for _, msg := range decisionMustShow(res) {
		t.Error(msg)
	}
}

// decisionMustShow lists what res fails of issue 39's must-show (nothing
// when it holds): no policy below hindsight; dcgpd's s* closes at least
// 30% of the gap between the historical mean and hindsight; dcgpd leaves
// no more unmet pickups than the historical mean; dcgpd's Brier score of
// P(empty) and of P(full) below the historical mean's at every h ≥ 3.
func decisionMustShow(res *backtest.DecisionResult) []string {
	var out []string
	floor := res.PerStationDay(res.Policy("hindsight"))
	for p, name := range res.Policies {
		if res.PerStationDay(p) < floor {
			out = append(out, fmt.Sprintf("%s leaves %.3f unmet trips per station-day, below the hindsight best's %.3f", name, res.PerStationDay(p), floor))
		}
	}
	dc, hm := res.Policy("dcgpd"), res.Policy("hm-c1p1t3")
	if g, ok := res.GapClosed(); !ok || g < 0.3 {
		out = append(out, fmt.Sprintf("dcgpd's s* closes %.1f%% of the gap between the historical mean and hindsight (ok %v), want at least 30%%", 100*g, ok))
	}
	if n := float64(res.StationDays); res.UnmetPickups[dc] > res.UnmetPickups[hm] {
		out = append(out, fmt.Sprintf("dcgpd's s* leaves %.3f unmet pickups per station-day, the historical mean's %.3f", res.UnmetPickups[dc]/n, res.UnmetPickups[hm]/n))
	}
	for hi, h := range res.Horizons {
		if h < 3 {
			continue
		}
		for e, ev := range []string{"empty", "full"} {
			if d, b := res.Brier[dc][e][hi], res.Brier[hm][e][hi]; !(d < b) {
				out = append(out, fmt.Sprintf("Brier score of P(%s within %d): dcgpd %.4f, historical mean %.4f", ev, h, d, b))
			}
		}
	}
	return out
}
