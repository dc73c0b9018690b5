package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestRunnerPublishesRealisedDemand: the bin's own estimates, filtered and
// smoothed, carry demand and demand_var, the forecasts do not; with a prior
// mean (the offset path). With the Tobit likelihood a censored cell's
// demand is above its supply and an uncensored one's is the observation
// (to 1e-12); with diffusion an uncensored cell's demand is at most the
// observation (the inflow is not negative). A missing cell's demand is the
// latent mean with demand_var = pred_var, exactly.
func TestRunnerPublishesRealisedDemand(t *testing.T) {
	feed := restoreFeed(60)
	type cell struct {
		bin time.Time
		p   string
	}
	obs := map[cell]wire.Observation{}
	for _, m := range feed {
		for _, o := range m.Observations {
			obs[cell{*m.BinStart, o.Product}] = o
		}
	}
	for _, lik := range []string{"tobit", "diffusion"} {
		t.Run(lik, func(t *testing.T) {
			c, m := restoreConfig(false)
			m.Model.Likelihood = lik
			m = withMean(c, m)
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
						if e.Demand != nil || e.DemandVar != nil {
							t.Fatalf("%s: forecast h=%d carries a realised demand", id, f.Horizon)
						}
					}
				}
				for _, e := range msg.Estimates {
					if e.Demand == nil || e.DemandVar == nil {
						t.Fatalf("%s %s: no realised demand", id, e.Product)
					}
					d, dv := *e.Demand, *e.DemandVar
					o := obs[cell{msg.BinStart, e.Product}]
					where := fmt.Sprintf("%s %s: demand %v var %v (mean %v pred_var %v, observation %+v)", id, e.Product, d, dv, e.Mean, e.PredVar, o)
					switch {
					case !e.Observed:
						if d != e.Mean || dv != e.PredVar {
							t.Fatalf("%s: a missing cell's demand is not the latent mean", where)
						}
						counts["missing"]++
					case e.Censored:
						if lik == "tobit" && !(d > *o.Supply && dv > 0) {
							t.Fatalf("%s: a censored cell's demand is not above its supply", where)
						}
						counts["censored"]++
					case e.Product != "p3": // p3 has late observations
						y := *o.Demand
						if lik == "tobit" && (math.Abs(d-y) > 1e-12*math.Max(1, y) || dv != 0) {
							t.Fatalf("%s: an uncensored cell's demand is not the observation", where)
						}
						if d > y+1e-12*math.Max(1, y) || !(dv >= 0) {
							t.Fatalf("%s: an uncensored cell's demand is above the observation", where)
						}
						counts["uncensored"]++
					}
				}
				counts[msg.Kind]++
			}
			t.Logf("%v", counts)
			for _, k := range []string{"missing", "censored", "uncensored", wire.KindFiltered, wire.KindSmoothed} {
				if counts[k] == 0 {
					t.Errorf("no %s estimate checked", k)
				}
			}
		})
	}
}

// TestRunnerOmitsRealisedDemandForCounts: a count likelihood has no
// realised demand (cvi.ErrNoRealised): its estimates omit the fields and
// are published all the same.
func TestRunnerOmitsRealisedDemandForCounts(t *testing.T) {
	c, m := restoreConfig(false)
	m.Model.Likelihood, m.Model.NoiseVariance = "poisson", 0
	c.Models = []config.ModelConfig{m}
	sink := newMemSink()
	r := newTestRunner(t, c, m, sink, nil)
	for i, msg := range restoreFeed(30) {
		r.handle(context.Background(), input{msg: msg, seq: uint64(i + 1), at: time.Unix(0, 0)})
	}
	estimates := 0
	for id, data := range sink.byID {
		var msg wire.LatentMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Missing != "" {
			t.Fatalf("%s: missing: %s", id, msg.Missing)
		}
		for _, e := range msg.Estimates {
			if e.Demand != nil || e.DemandVar != nil {
				t.Fatalf("%s %s: a count likelihood published a realised demand", id, e.Product)
			}
			estimates++
		}
	}
	if estimates == 0 {
		t.Fatal("no estimate published")
	}
}
