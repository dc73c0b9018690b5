package test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/dcgpd/dcgpd/internal/procstat"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// benchConfig is a daemon with models × products hubs, each model an
// independent Matérn-3/2 + daily periodic prior with the likelihood lik.
func benchConfig(b *testing.B, models, products int, lik string) config.Config {
	cfg := config.DefaultConfig()
	cfg.NATS.Listen = "127.0.0.1:-1"
	cfg.NATS.StoreDir = filepath.Join(b.TempDir(), "js")
	cfg.Snapshot.Dir = filepath.Join(b.TempDir(), "snapshots")
	cfg.NATS.MaxAckPending = 50000
	cfg.HTTP.Listen = "off"
	cfg.Log.Level = "error"
	for i := 0; i < models; i++ {
		m := config.DefaultModelConfig()
		m.Name = "m" + strconv.Itoa(i)
		m.Bin = config.Duration{Duration: time.Hour}
		m.Origin = origin
		m.Horizon = 1
		m.Resmooth.EveryBins = 0
		for k := 0; k < products; k++ {
			m.Product = append(m.Product, config.ProductConfig{Name: "p" + strconv.Itoa(k), Features: []float64{float64(k%5) * 200, float64(k/5) * 200}})
		}
		m.Model = spec.Model{Likelihood: lik, NoiseVariance: 1.5,
			Temporal: []spec.Temporal{{Kernel: "matern32", Variance: 6, Lengthscale: 24},
				{Kernel: "periodic", Variance: 4, Period: 24, Harmonics: 3, Lengthscale: 1}},
			Diffusion: spec.Diffusion{Lengthscale: 250, Sink: 0.2, Sites: "diagonal"}}
		cfg.Models = append(cfg.Models, m)
	}
	return cfg
}

// benchBin is one bin of synthetic hourly demand with occasional
// stock-outs.
func benchBin(rng *rand.Rand, products int, start time.Time) []wire.Observation {
	hour := float64(start.Hour())
	obs := make([]wire.Observation, products)
	for k := range obs {
		rate := 5 + 3*math.Sin(2*math.Pi*hour/24+float64(k))
		y := math.Max(0, math.Round(rate+rng.NormFloat64()))
		o := wire.Observation{Product: "p" + strconv.Itoa(k)}
		if rng.Float64() < 0.15 {
			u := math.Floor(0.7 * y)
			c := true
			y = u
			o.Supply, o.Censored = &u, &c
		}
		o.Demand = &y
		obs[k] = o
	}
	return obs
}

// BenchmarkEndToEnd pushes observations through the embedded server into
// the daemon and out again: 100 models × 10 products, 2,000 hourly bins
// each (2 million observations), as one message per bin ("bin") or one
// per observation ("single", 2,000 bins per model: 2 million messages). One
// op is the whole run, from the first publish to the last filtered
// estimate received; obs/s is reported. DCGPD_BENCH_BINS overrides the
// bins per model.
func BenchmarkEndToEnd(b *testing.B) {
	for _, tc := range []struct {
		name   string
		lik    string
		single bool
		bins   int
	}{
		{"bin/tobit", "tobit", false, 2000},
		{"bin/diffusion-diagonal", "diffusion", false, 200},
		{"single/tobit", "tobit", true, 2000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const models, products = 100, 10
			bins := tc.bins
			if v, err := strconv.Atoi(os.Getenv("DCGPD_BENCH_BINS")); err == nil && v > 0 {
				bins = v
			}
			for i := 0; i < b.N; i++ {
				r := startDaemon(b, benchConfig(b, models, products, tc.lik))
				var got atomic.Int64
				want := int64(models * bins)
				all := make(chan struct{})
				if _, err := r.nc.Subscribe("dcgp.latent.>", func(m *nats.Msg) {
					if got.Add(1) == want {
						close(all)
					}
				}); err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				data := make([][]natsio.ReplayBin, models)
				for mi := range data {
					for j := 0; j < bins; j++ {
						start := origin.Add(time.Duration(j) * time.Hour)
						data[mi] = append(data[mi], natsio.ReplayBin{Start: start, Observations: benchBin(rng, products, start)})
					}
				}
				b.ResetTimer()
				began, cpu0 := time.Now(), procstat.CPU()
				var wg sync.WaitGroup
				pubs := 4
				for p := 0; p < pubs; p++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						nc, err := nats.Connect(r.d.NATSURL())
						if err != nil {
							b.Error(err)
							return
						}
						defer nc.Close()
						js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(8192))
						for mi := p; mi < models; mi += pubs {
							if _, err := natsio.Replay(context.Background(), js, "m"+strconv.Itoa(mi), data[mi], natsio.ReplayOptions{Single: tc.single}); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				select {
				case <-all:
				case <-time.After(10 * time.Minute):
					b.Fatalf("only %d of %d bins published", got.Load(), want)
				}
				el, cpu := time.Since(began), procstat.CPU()-cpu0
				b.StopTimer()
				b.ReportMetric(float64(models*bins*products)/el.Seconds(), "obs/s")
				b.ReportMetric(cpu.Seconds(), "cpu-s")
				b.ReportMetric(float64(models*bins)/el.Seconds(), "bins/s")
				r.stop()
			}
		})
	}
}

// BenchmarkLatency publishes 1,000 observations a second (10 models × 10
// products, one bin message per model every 10 ms, 10 s) and measures
// from each publish to the arrival of that bin's filtered estimate at a
// subscriber: ingest, bin close, online step, JetStream store, delivery.
func BenchmarkLatency(b *testing.B) {
	const models, products, rate = 10, 10, 1000
	for i := 0; i < b.N; i++ {
		r := startDaemon(b, benchConfig(b, models, products, "tobit"))
		var mu sync.Mutex
		sent := map[string]time.Time{}
		var lat []float64
		if _, err := r.nc.Subscribe("dcgp.latent.>", func(m *nats.Msg) {
			var lm wire.LatentMessage
			if json.Unmarshal(m.Data, &lm) != nil {
				return
			}
			key := fmt.Sprintf("%s/%d", lm.Model, lm.BinStart.Unix())
			mu.Lock()
			if t0, ok := sent[key]; ok {
				lat = append(lat, time.Since(t0).Seconds())
			}
			mu.Unlock()
		}); err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		period := time.Second * time.Duration(products) / rate
		tick := time.NewTicker(period)
		total := 10 * rate / products // 10 s of bin messages
		b.ResetTimer()
		for j := 0; j < total; j++ {
			<-tick.C
			mi, bin := j%models, j/models
			start := origin.Add(time.Duration(bin) * time.Hour)
			msg := wire.ObsMessage{Schema: wire.SchemaVersion, Model: "m" + strconv.Itoa(mi), BinStart: &start, Observations: benchBin(rng, products, start)}
			data, _ := json.Marshal(&msg)
			mu.Lock()
			sent[fmt.Sprintf("%s/%d", msg.Model, start.Unix())] = time.Now()
			mu.Unlock()
			if _, err := r.js.PublishAsync("dcgp.obs."+msg.Model, data); err != nil {
				b.Fatal(err)
			}
		}
		tick.Stop()
		time.Sleep(500 * time.Millisecond)
		b.StopTimer()
		mu.Lock()
		sort.Float64s(lat)
		n := len(lat)
		mu.Unlock()
		if n < total*9/10 {
			b.Fatalf("%d of %d bins measured", n, total)
		}
		b.ReportMetric(lat[n/2]*1e3, "p50-ms")
		b.ReportMetric(lat[n*99/100]*1e3, "p99-ms")
		r.stop()
	}
}
