package test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/app/backtest"
	"github.com/dcgpd/dcgpd/internal/app/synth"
	"github.com/dcgpd/dcgpd/inventory"
)

// TestLongCitiBikeDecision is issue 26's must-show on real data: on the
// three held-out-benchmark clusters of ten Citi Bike stations, a
// pickups model and a returns model (the shipped bike model, learned on
// June and July 2018 from the history's censored counts) forecast each
// operating day of August 2018 (06:00 to 06:00) at 06:00; stocking each
// station at dcgpd's s* leaves fewer unmet pickups plus returns per
// station-day than stocking at the s* of the historical mean's rates
// (HM(C1,P1,T3)) on every cluster. August was not used to choose
// anything. The unmet trips of every policy are at least the hindsight
// best's. Each cluster's tables are recorded in
// testdata/golden/TestLongCitiBikeDecision/<cluster>.golden.
// DCGPD_DECISION_SPAN=TRAIN,EVAL,END runs other months.
func TestLongCitiBikeDecision(t *testing.T) {
	requireLongMode(t)
	skipWithoutCitiBike(t)
	st, err := synth.ReadBikeStations(citibikeDir)
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := synth.NeighbourClusters(st, 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	train, eval, end := spanFromEnv(t, "DCGPD_DECISION_SPAN")
	sp, err := spec.Load(shippedBikeModel)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range clusters {
		if only := os.Getenv("DCGPD_DECISION_CLUSTER"); only != "" && only != cl.Name {
			continue
		}
		t.Run(cl.Name, func(t *testing.T) {
			// One day more than the evaluation: the last operating day
			// ends at 06:00 after End.
			d, transfer, err := backtest.CitiBikeStations(citibikeDir, cl.Stations, train, end.Add(24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			o := backtest.DecisionOptions{Spec: sp, Data: d, World: decisionWorld(transfer), EvalFrom: eval, End: end.Add(24 * time.Hour),
				DayStart: 6, Planner: inventory.DefaultConfig(), Horizons: []int{1, 3, 6, 12, 24}, Weeks: 4,
				Progress: func(s string) { t.Log(s) }}
			began := time.Now()
			res, err := o.RunDecision(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var tbl, cal strings.Builder
			if err := res.WriteDecisionTable(&tbl, cl.Name); err != nil {
				t.Fatal(err)
			}
			if err := res.WriteCalibration(&cal); err != nil {
				t.Fatal(err)
			}
			var pr, rr strings.Builder
			_ = res.PickupsReport.WriteTable(&pr)
			_ = res.ReturnsReport.WriteTable(&rr)
			t.Logf("%s (learn %.0f s, stream %.0f s, total %.0f s):\n%s\n%s\npickups forecasts:\n%s\nreturns forecasts:\n%s",
				cl.Name, res.Learn.Seconds(), res.Stream.Seconds(), time.Since(began).Seconds(), tbl.String(), cal.String(), pr.String(), rr.String())
			floor := res.PerStationDay(res.Policy("hindsight"))
			for p, name := range res.Policies {
				if res.PerStationDay(p) < floor {
					t.Errorf("%s leaves %.3f unmet trips per station-day, below the hindsight best's %.3f", name, res.PerStationDay(p), floor)
				}
			}
			if os.Getenv("DCGPD_DECISION_SPAN") == "" {
				recordFigures(t, fmt.Sprintf("# %s %v, learned on %s to %s, decided each day %s to %s (go test ./test/ -run 'TestLongCitiBikeDecision/%s' in long mode)\n%s\n%s\n# pickups forecasts\n%s\n# returns forecasts\n%s",
					cl.Name, cl.Stations, train.Format(time.DateOnly), eval.Format(time.DateOnly), eval.Format(time.DateOnly), end.Format(time.DateOnly), cl.Name, tbl.String(), cal.String(), pr.String(), rr.String()))
			}
			dc, hm := res.PerStationDay(res.Policy("dcgpd")), res.PerStationDay(res.Policy("hm-c1p1t3"))
			if !(dc < hm) {
				t.Errorf("dcgpd's s* leaves %.3f unmet trips per station-day, the historical mean's %.3f: not fewer", dc, hm)
			}
		})
	}
}
