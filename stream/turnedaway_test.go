package stream

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestRunnerPublishesTurnedAway: with the diffusion likelihood a bin's
// own estimate of a full product (censored, or sent without demand and
// with supply 0) carries turned_away = E[max(f − u, 0)] under its
// published mean and var (closed form, to 1e-12), turned_away_var, lost =
// the sink's 0.2 of it and diversions that add up with lost to
// turned_away (to 1e-12); an uncensored or missing product and every
// forecast carry none; with the Tobit likelihood nothing does.
func TestRunnerPublishesTurnedAway(t *testing.T) {
	feed := restoreFeed(40)
	// Bin 40: p0 full and serving nobody (no demand, supply 0).
	full := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(40 * time.Hour)
	zero, five := 0.0, 5.0
	feed = append(feed, &wire.ObsMessage{Schema: wire.SchemaVersion, Model: "city", BinStart: &full,
		Observations: []wire.Observation{{Product: "p0", Supply: &zero}, {Product: "p1", Demand: &five}, {Product: "p2", Demand: &five}, {Product: "p3", Demand: &five}}})
	supply := map[string]float64{}
	for _, m := range feed {
		for _, o := range m.Observations {
			if o.Supply != nil {
				supply[m.BinStart.Format(time.RFC3339)+o.Product] = *o.Supply
			}
		}
	}
	for _, lik := range []string{"diffusion", "tobit"} {
		t.Run(lik, func(t *testing.T) {
			c, m := restoreConfig(false)
			m.Model.Likelihood = lik
			sink := newMemSink()
			r := newTestRunner(t, c, m, sink, nil)
			for i, msg := range feed {
				r.handle(context.Background(), input{msg: msg, seq: uint64(i + 1), at: time.Unix(0, 0)})
			}
			counts := map[string]int{}
			for id, data := range sink.byID {
				var msg wire.LatentMessage
				if err := json.Unmarshal(data, &msg); err != nil {
					t.Fatal(err)
				}
				for _, f := range msg.Forecasts {
					for _, e := range f.Estimates {
						if e.TurnedAway != nil || e.Lost != nil || e.Diverted != nil {
							t.Fatalf("%s: forecast h=%d carries a turned-away demand", id, f.Horizon)
						}
					}
				}
				for _, e := range msg.Estimates {
					u, hasSupply := supply[msg.BinStart.Format(time.RFC3339)+e.Product]
					isFull := e.Censored || !e.Observed && hasSupply
					if lik == "tobit" || !isFull {
						if e.TurnedAway != nil || e.TurnedAwayVar != nil || e.Lost != nil || e.Diverted != nil {
							t.Fatalf("%s %s: turned-away demand on a product that was not full (%s)", id, e.Product, lik)
						}
						counts["none"]++
						continue
					}
					if e.TurnedAway == nil || e.TurnedAwayVar == nil || e.Lost == nil {
						t.Fatalf("%s %s: a full product without its turned-away demand", id, e.Product)
					}
					mean, vr := cvi.ExcessMoments(e.Mean, e.Var, u)
					if math.Abs(*e.TurnedAway-mean) > 1e-12*math.Max(1, mean) || math.Abs(*e.TurnedAwayVar-vr) > 1e-12*math.Max(1, vr) {
						t.Fatalf("%s %s: turned away %v var %v, closed form %v %v (mean %v var %v supply %v)", id, e.Product, *e.TurnedAway, *e.TurnedAwayVar, mean, vr, e.Mean, e.Var, u)
					}
					sum := *e.Lost
					for _, d := range e.Diverted {
						sum += d.Mean
					}
					if math.Abs(*e.Lost-0.2**e.TurnedAway) > 1e-12 || math.Abs(sum-*e.TurnedAway) > 1e-12*math.Max(1, mean) || len(e.Diverted) != 3 {
						t.Fatalf("%s %s: lost %v and diversions %+v do not split turned away %v", id, e.Product, *e.Lost, e.Diverted, *e.TurnedAway)
					}
					if e.Observed {
						counts["censored"]++
					} else {
						counts["unobserved-full"]++
					}
				}
			}
			t.Logf("%v", counts)
			if lik == "diffusion" && (counts["censored"] == 0 || counts["unobserved-full"] == 0 || counts["none"] == 0) {
				t.Errorf("not every case checked: %v", counts)
			}
		})
	}
}
