package cvi

import (
	"fmt"
	"github.com/dcgpd/dcgpd/internal/procstat"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/diffusion"
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/filter/kernel"
)

// evSites builds an EV network of np charging sites in 5-minute bins:
// sites on a jittered 300 m grid, each keeping chargersPerSite chargers;
// the examples/ev-5min model (Matérn-3/2 1 h + daily periodic, 4
// harmonics + weekly periodic, 2 harmonics; hours as the time unit),
// the diffusion likelihood with diagonal sites on an 8-nearest-neighbour
// graph; and 288 bins (a day) of arrivals: Poisson at 0.02–0.3 a bin by
// the hour, a site censored at its served count in a fifth of its bins.
func evSites(tb testing.TB, np int, seed uint64) (*Online, [][]Obs, []float64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	side := int(math.Ceil(math.Sqrt(float64(np))))
	feats := make([][]float64, np)
	for k := range feats {
		feats[k] = []float64{300*float64(k%side) + 60*rng.NormFloat64(), 300*float64(k/side) + 60*rng.NormFloat64()}
	}
	graph, err := diffusion.NewGraph(feats, diffusion.GraphOptions{K: 8})
	if err != nil {
		tb.Fatal(err)
	}
	m32, _ := kernel.NewMatern32(0.0066, 1)
	day, _ := kernel.NewPeriodic(0.0022, 0.68, 24, 4)
	week, _ := kernel.NewPeriodic(0.00096, 1.13, 168, 2)
	temporal, _ := kernel.NewSum(m32, day, week)
	m, err := filter.NewModel(temporal, nil, nil, np)
	if err != nil {
		tb.Fatal(err)
	}
	lik, err := NewDiffusion(DiffusionOptions{Graph: graph, Lengthscale: 400, Sink: 0.4, Variance: 0.025, Sites: DiagonalSites})
	if err != nil {
		tb.Fatal(err)
	}
	on, err := NewOnline(m, lik, DefaultOnlineOptions())
	if err != nil {
		tb.Fatal(err)
	}
	const binsPerDay = 288
	times := make([]float64, binsPerDay)
	bins := make([][]Obs, binsPerDay)
	for i := range bins {
		times[i] = float64(i) / 12 // hours
		hour := float64(i) / 12
		rate := 0.02 + 0.28*math.Exp(-(hour-9)*(hour-9)/8)
		bins[i] = make([]Obs, np)
		for k := range bins[i] {
			y := float64(poissonDraw(rng, rate))
			o := Obs{Y: y, Supply: y + 1 + float64(rng.IntN(3))}
			if rng.Float64() < 0.2 {
				o.Supply, o.Censored = y, true
			}
			bins[i][k] = o
		}
	}
	return on, bins, times
}

func poissonDraw(rng *rand.Rand, lam float64) int {
	l, k, p := math.Exp(-lam), 0, rng.Float64()
	for p > l {
		k++
		p *= rng.Float64()
	}
	return k
}

// BenchmarkEVSites times EV charging networks in 5-minute bins, per size
// (sites × 4 chargers: 2,000 chargers = 500 sites): one op of
// .../bin is the online step of one bin (Kalman predict, local CVI,
// update: the daemon's per-bin work before publishing), one op of
// .../resmooth-day a re-smooth of a day's window (288 bins: batch CVI
// warm-started from the online sites, Converge(1, 1e-9, 500) and the
// smoothed marginals, as the daemon's re-smooth). cpu-s/op is the
// process's CPU time per op.
//
//	go test -run X -bench 'EVSites' -benchtime 1x -benchmem ./cvi/
func BenchmarkEVSites(b *testing.B) {
	for _, np := range []int{100, 500} {
		b.Run(fmt.Sprintf("sites=%d/chargers=%d/bin", np, 4*np), func(b *testing.B) {
			on, bins, times := evSites(b, np, 5)
			var res BinResult
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := procstat.CPU()
			for i := 0; i < b.N; i++ {
				j := i % len(bins)
				t := times[j] + 24*float64(i/len(bins))
				if err := on.Step(t, bins[j], &res); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((procstat.CPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
		b.Run(fmt.Sprintf("sites=%d/chargers=%d/resmooth-day", np, 4*np), func(b *testing.B) {
			on, bins, times := evSites(b, np, 5)
			data := &Data{NP: np, Times: times}
			warm := filter.NewSites(len(times), np, false)
			var res BinResult
			for i := range times {
				data.Obs = append(data.Obs, bins[i]...)
				if err := on.Step(times[i], bins[i], &res); err != nil {
					b.Fatal(err)
				}
				l1, l2 := warm.Bin(i)
				copy(l1, res.Nat1)
				copy(l2, res.Nat2)
			}
			iters := 0
			b.ReportAllocs()
			peak := samplePeakHeap()
			b.ResetTimer()
			cpu0 := procstat.CPU()
			for i := 0; i < b.N; i++ {
				e, err := NewEngine(on.model, on.lik, data)
				if err != nil {
					b.Fatal(err)
				}
				if err := e.SetSites(warm); err != nil {
					b.Fatal(err)
				}
				n, _, err := e.Converge(1, 1e-9, 500)
				if err != nil {
					b.Fatal(err)
				}
				iters += n
				var post filter.Posterior
				if err := e.PredictAll(&post); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((procstat.CPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(peak())/1e6, "peak-heap-MB")
			b.ReportMetric(float64(iters)/float64(b.N), "cvi-iters")
		})
	}
}
