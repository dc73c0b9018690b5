package test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestDaemonAccuracy replays a data set through the daemon with one
// re-smooth at the end whose window covers every bin and which re-learns
// the hyperparameters, and reports the RMSE against the true demand of the
// online filtered, the smoothed and the batch DCGP estimates (staged
// learning from the same configuration), on observed and held-out hours:
// the simulated cluster here, the real Citi Bike hubs in long mode
// (TestLongDaemonAccuracyCitiBike). It asserts that every bin is estimated, that smoothing
// (which sees the future) beats filtering on held-out hours, and that the
// smoothed estimates are within 2% of the batch fit's there.
func TestDaemonAccuracy(t *testing.T) {
	t.Parallel()
	daemonAccuracy(t, map[string]*cluster{"simulated": simulated(t, 5, 14)})
}

// TestLongDaemonAccuracyCitiBike is TestDaemonAccuracy on the real Citi
// Bike hubs of the paper's bike appendix (long mode: real data).
func TestLongDaemonAccuracyCitiBike(t *testing.T) {
	requireLongMode(t)
	skipWithoutCitiBike(t)
	daemonAccuracy(t, map[string]*cluster{"citibike-4": fromDataset(paperBikeDataset(t))})
}

// daemonAccuracy runs TestDaemonAccuracy on each data set.
func daemonAccuracy(t *testing.T, sets map[string]*cluster) {
	for name, c := range sets {
		t.Run(name, func(t *testing.T) {
			n := len(c.bins)
			cfg := daemonConfig(t, c, 1)
			sp := spec.Spec{Model: spec.Model{Likelihood: "diffusion",
				Temporal: []spec.Temporal{{Kernel: "matern32", Lengthscale: 24, Variance: 10},
					{Kernel: "periodic", Period: 24, Harmonics: 4, Lengthscale: 1, Variance: 10}},
				Diffusion: spec.Diffusion{Lengthscale: 250, Sink: 0.2}}}
			if name != "simulated" {
				sp.Model.Diffusion.Lengthscale = 300
			}
			cfg.Models[0].Model = sp.Model
			cfg.Models[0].Resmooth = config.ResmoothConfig{EveryBins: n, Window: n, Relearn: true}
			r := startDaemon(t, cfg)
			col := collect(t, r.nc, "dcgp.latent.cluster0")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if _, err := natsio.Replay(ctx, r.js, "cluster0", c.bins, natsio.ReplayOptions{Width: time.Hour, Watermark: true}); err != nil {
				t.Fatal(err)
			}
			msgs := col.wait(t, "the smoothed revision", 5*time.Minute, func(ms []wire.LatentMessage) bool { return count(wire.KindSmoothed)(ms) >= n })
			filtered, smoothed := map[int64][]float64{}, map[int64][]float64{}
			for _, m := range msgs {
				dst := filtered
				if m.Kind == wire.KindSmoothed {
					dst = smoothed
				}
				for _, e := range m.Estimates {
					dst[m.BinStart.Unix()] = append(dst[m.BinStart.Unix()], e.Mean)
				}
			}
			np := len(c.names)
			f, err := sp.Learn(ctx, c.data, spec.Summarise(c.data, c.feats, false), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			var full filter.Posterior
			if err := f.Engine.PredictAll(&full); err != nil {
				t.Fatal(err)
			}
			batch := full.Mean
			truth := c.truth()
			rmse := func(est func(b, k int) float64, held bool) float64 {
				var s float64
				var m int
				for b := range c.bins {
					for k := 0; k < np; k++ {
						if math.IsNaN(c.data.Bin(b)[k].Y) != held {
							continue
						}
						e := est(b, k) - truth[b*np+k]
						s += e * e
						m++
					}
				}
				return math.Sqrt(s / float64(m))
			}
			get := func(src map[int64][]float64) func(b, k int) float64 {
				return func(b, k int) float64 {
					v := src[c.bins[b].Start.Unix()]
					if len(v) != np {
						t.Fatalf("bin %d: %d estimates", b, len(v))
					}
					return v[k]
				}
			}
			fo, fh := rmse(get(filtered), false), rmse(get(filtered), true)
			so, sh := rmse(get(smoothed), false), rmse(get(smoothed), true)
			bo, bh := rmse(func(b, k int) float64 { return batch[b*np+k] }, false), rmse(func(b, k int) float64 { return batch[b*np+k] }, true)
			t.Logf("%s, %d bins × %d products, RMSE vs true demand (observed / held-out hours): online filtered %.3f / %.3f, smoothed %.3f / %.3f, batch DCGP %.3f / %.3f (smoothed vs batch on held-out hours %+.1f%%); batch status %s",
				name, n, np, fo, fh, so, sh, bo, bh, 100*(sh/bh-1), f.Result.Status)
			if !(sh < fh) {
				t.Fatalf("smoothed (%.3f) does not beat filtered (%.3f) on held-out hours", sh, fh)
			}
			// The README's claim: the daemon's re-smoothed estimates are
			// within 2% of the batch fit's on held-out hours.
			if math.Abs(sh/bh-1) > 0.02 {
				t.Errorf("smoothed %.3f vs batch %.3f on held-out hours: %+.1f%%, more than 2%%", sh, bh, 100*(sh/bh-1))
			}
		})
	}
}
