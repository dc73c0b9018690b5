package stream

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// catchUpConfig is one model of 10 hubs, hourly bins, the diffusion
// likelihood (diagonal sites) with a Matérn-3/2 + daily periodic prior and
// the default re-smooth (168 bins every 24, swapped in 24 bins later),
// re-learning when relearn: what a daemon started on a stream that holds
// months of input runs.
func catchUpConfig(relearn bool) (*config.Config, config.ModelConfig) {
	c := config.DefaultConfig()
	c.Snapshot.Dir = "off"
	m := config.DefaultModelConfig()
	m.Name, m.Bin, m.Horizon = "hubs", config.Duration{Duration: time.Hour}, 24
	m.Origin = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Resmooth.Relearn = relearn
	for k := 0; k < 10; k++ {
		m.Product = append(m.Product, config.ProductConfig{Name: "p" + strconv.Itoa(k), Features: []float64{float64(k%5) * 200, float64(k/5) * 200}})
	}
	m.Model = spec.Model{Likelihood: "diffusion", NoiseVariance: 1.5,
		Temporal: []spec.Temporal{{Kernel: "matern32", Variance: 6, Lengthscale: 24},
			{Kernel: "periodic", Variance: 4, Period: 24, Harmonics: 6, Lengthscale: 1}},
		Diffusion: spec.Diffusion{Lengthscale: 250, Sink: 0.2}}
	c.Models = []config.ModelConfig{m}
	return &c, m
}

// catchUpFeed returns n hourly bins of 10 products, one message per bin,
// with a daily rhythm and stock-outs.
func catchUpFeed(n int, origin time.Time) []*wire.ObsMessage {
	rng := rand.New(rand.NewPCG(7, 8))
	out := make([]*wire.ObsMessage, n)
	for i := range out {
		start := origin.Add(time.Duration(i) * time.Hour)
		obs := make([]wire.Observation, 10)
		for k := range obs {
			rate := 5 + 3*math.Sin(2*math.Pi*float64(i)/24+float64(k))
			y := math.Max(0, math.Round(rate+rng.NormFloat64()))
			o := wire.Observation{Product: "p" + strconv.Itoa(k), Demand: &y}
			if rng.Float64() < 0.15 {
				u := math.Floor(0.7 * y)
				c := true
				o.Demand, o.Supply, o.Censored = &u, &u, &c
			}
			obs[k] = o
		}
		out[i] = &wire.ObsMessage{Schema: wire.SchemaVersion, Model: "hubs", BinStart: &start, Observations: obs}
	}
	return out
}

// cpuTime is the CPU time (user and system) the process has used: on a
// shared machine steadier than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCatchUp is a daemon catching up on a backlog: b.N hourly bins
// of 10 products handed to one runner as fast as it takes them (the
// consumer's side, NATS, is not in it), with the default re-smooth and, in
// "relearn", re-learning; the "-tol1e-6" variants set resmooth.tolerance =
// 1e-6 instead of the default 1e-9. It reports bins/s, the CPU seconds
// (both cores count) and bins per CPU second; a year of hourly bins is
// 8,760. Run with -benchtime 2208x (three months). The "-mean" variants
// add a prior mean (the feed's daily rhythm, [model.mean] level fixed),
// "-level" the same mean whose level is re-estimated at every re-smooth
// (level = "scale"): the cost of following the level.
func BenchmarkCatchUp(b *testing.B) {
	for _, tc := range []struct {
		name    string
		relearn bool
		tol     float64
		mean    string // "": no prior mean; else its level
	}{{"resmooth", false, 0, ""}, {"resmooth-tol1e-6", false, 1e-6, ""}, {"relearn", true, 0, ""}, {"relearn-tol1e-6", true, 1e-6, ""},
		{"resmooth-mean", false, 0, spec.LevelFixed}, {"resmooth-level", false, 0, spec.LevelScale},
		{"relearn-mean", true, 0, spec.LevelFixed}, {"relearn-level", true, 0, spec.LevelScale}} {
		b.Run(tc.name, func(b *testing.B) {
			c, m := catchUpConfig(tc.relearn)
			m.Resmooth.Tolerance = tc.tol
			if tc.mean != "" {
				m = withCatchUpMean(c, m, tc.mean)
			}
			feed := catchUpFeed(b.N, m.Origin)
			r, err := NewRunner(c, m, &nullSink{}, zerolog.Nop(), NewMetrics(nil))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i, msg := range feed {
				r.handle(ctx, input{msg: msg, seq: uint64(i + 1), at: *msg.BinStart})
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "bins/s")
			b.ReportMetric(cpu.Seconds(), "cpu-s")
			b.ReportMetric(float64(b.N)/cpu.Seconds(), "bins/cpu-s")
			b.ReportMetric(float64(r.revision), "resmooths")
		})
	}
}

// withCatchUpMean gives m the feed's daily rhythm as its prior mean, with
// the level given.
func withCatchUpMean(c *config.Config, m config.ModelConfig, level string) config.ModelConfig {
	no := false
	m.Model.Mean = spec.Mean{Kind: "periodic", Period: 168, Step: 1, Estimate: &no, Level: level, Values: map[string][]float64{}}
	for k, p := range m.Product {
		vs := make([]float64, 168)
		for c := range vs {
			vs[c] = 5 + 3*math.Sin(2*math.Pi*float64(c)/24+float64(k))
		}
		m.Model.Mean.Values[p.Name] = vs
	}
	c.Models = []config.ModelConfig{m}
	return m
}
