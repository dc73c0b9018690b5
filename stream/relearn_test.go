package stream

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/mathx"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// Storm test: two stations with a daily shape around a flat prior mean,
// so the quasi-periodic 24 h component carries the shape; on days
// stormFrom to stormTo demand is a sixth of normal.
const (
	stormDays = 15
	stormFrom = 5
	stormTo   = 7
)

// Odd days: "storm", demand at a sixth of normal; "flat", demand at the
// prior mean with no daily shape (what drives a daily variance to 0).
func stormTruth(b, k int, odd string) float64 {
	h := float64(b % 24)
	flat := 9 + 2*float64(k)
	v := flat + 6*math.Sin(2*math.Pi*(h-9)/24)
	if b/24 >= stormFrom && b/24 < stormTo {
		switch odd {
		case "storm":
			v /= 6
		case "flat":
			v = flat
		}
	}
	return v
}

// stormConfig re-learns every 24 bins on a window of three days.
func stormConfig() (*config.Config, config.ModelConfig) {
	c := config.DefaultConfig()
	c.Snapshot.Dir = "unused"
	m := config.DefaultModelConfig()
	m.Name, m.Bin, m.Horizon = "city", config.Duration{Duration: time.Hour}, 24
	m.Origin = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Resmooth = config.ResmoothConfig{EveryBins: 24, Window: 72, Relearn: true, MaxWait: config.Duration{Duration: time.Minute}}
	no := false
	m.Model = spec.Model{Likelihood: "tobit", NoiseVariance: 1.5, NoiseFixed: true,
		Temporal: []spec.Temporal{
			{Kernel: "matern32", Variance: 1, Lengthscale: 3},
			{Kernel: "quasiperiodic", Period: 24, Harmonics: 3, Variance: 12, Lengthscale: 1, MaternLengthscale: 48, FixedParams: []string{"period"}}},
		Mean: spec.Mean{Kind: "periodic", Period: 24, Step: 1, Estimate: &no, Values: map[string][]float64{}}}
	for k := 0; k < 2; k++ {
		name := fmt.Sprintf("p%d", k)
		m.Product = append(m.Product, config.ProductConfig{Name: name, Features: []float64{float64(k) * 500, 0}})
		vs := make([]float64, 24)
		for i := range vs {
			vs[i] = 9 + 2*float64(k)
		}
		m.Model.Mean.Values[name] = vs
	}
	c.Models = []config.ModelConfig{m}
	return &c, m
}

// stormRun streams the storm feed (or the same feed without the storm)
// and returns the daily component's variance after every swap of
// re-learned hyperparameters, its anchor, and the RMSE of the forecasts
// at h = 1 … 24 issued on the last two days against the true demand.
func stormRun(t *testing.T, odd string) (daily []float64, anchor, rmse float64) {
	t.Helper()
	c, m := stormConfig()
	sink := &forecastSink{}
	r, err := NewRunner(c, m, sink, zerolog.Nop(), NewMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	r.store = nil
	idx := -1
	for i, n := range r.built.Model.ParamNames() {
		if strings.HasPrefix(n, "temporal.1.") && strings.HasSuffix(n, "variance") {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no daily variance among %v", r.built.Model.ParamNames())
	}
	variance := func() float64 { return mathx.Softplus(r.built.Model.Params(nil)[idx]) }
	anchor = variance()
	rng := rand.New(rand.NewPCG(5, 6))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rev := 0
	for b := 0; b < stormDays*24; b++ {
		start := m.Origin.Add(time.Duration(b) * time.Hour)
		msg := &wire.ObsMessage{Schema: wire.SchemaVersion, Model: "city", BinStart: &start}
		for k := 0; k < 2; k++ {
			d := math.Max(0, stormTruth(b, k, odd)+1.2*rng.NormFloat64())
			msg.Observations = append(msg.Observations, wire.Observation{Product: fmt.Sprintf("p%d", k), Demand: &d})
		}
		r.handle(ctx, input{msg: msg, seq: uint64(b + 1), at: start})
		if r.revision != rev {
			rev = r.revision
			daily = append(daily, variance())
		}
	}
	var se float64
	var n int
	for _, msg := range sink.msgs {
		if msg.BinStart.Sub(m.Origin).Hours() < float64((stormDays-2)*24) {
			continue
		}
		for _, f := range msg.Forecasts {
			b := int(f.BinStart.Sub(m.Origin).Hours())
			for k, e := range f.Estimates {
				d := e.Mean - stormTruth(b, k, odd)
				se += d * d
				n++
			}
		}
	}
	return daily, anchor, math.Sqrt(se / float64(n))
}

// TestRelearnRecoversFromStormWeek: a daemon re-learning every 24 bins on
// a three-day window sees two days at a sixth of normal demand. The daily
// component's variance never falls below its floor (RelearnFloor × the
// anchor, to 1e-9 relative) while the storm is in the window, is back
// above half the anchor at every swap once the storm has left the window,
// and the forecasts of the last two days (h = 1 … 24) are within 10% in
// RMSE of a run without the storm.
func TestRelearnRecoversFromStormWeek(t *testing.T) {
	_, _, calm := stormRun(t, "")
	for _, odd := range []string{"storm", "flat"} {
		t.Run(odd, func(t *testing.T) { checkStormRecovery(t, odd, calm) })
	}
}

func checkStormRecovery(t *testing.T, odd string, calm float64) {
	daily, anchor, rmse := stormRun(t, odd)
	t.Logf("daily variance at each swap (anchor %.3g): %.3g; RMSE of the last two days' forecasts %.3f (no odd days %.3f)", anchor, daily, rmse, calm)
	if len(daily) < stormDays-4 {
		t.Fatalf("%d swaps over %d days: the test would not cover re-learning", len(daily), stormDays)
	}
	for i, v := range daily {
		if v < RelearnFloor*anchor*(1-1e-9) {
			t.Errorf("swap %d: daily variance %.3g below its floor %.3g", i, v, RelearnFloor*anchor)
		}
	}
	// Swap i is the re-smooth started after bin 24(i+1) (window: the
	// three days before it); the storm has left the window from day
	// stormTo + 3 on.
	for i, v := range daily {
		if day := i + 1; day >= stormTo+3 && v < anchor/2 {
			t.Errorf("swap %d (day %d, storm out of the window): daily variance %.3g, want above half the anchor %.3g", i, day, v, anchor)
		}
	}
	if rmse > 1.1*calm {
		t.Errorf("forecast RMSE of the last two days %.3f, more than 10%% above the run without the storm (%.3f)", rmse, calm)
	}
}
