package cvi

import (
	"fmt"
	"github.com/dcgpd/dcgpd/internal/procstat"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/dcgpd/dcgpd/diffusion"
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/filter/kernel"
)

// BenchmarkOnlineBin times the daemon's per-bin work for 10 products, one
// op = one bin: predict, local CVI refinement with the diffusion
// likelihood (64 points), update and one forecast. Indep10 is the
// Independent product kernel over Matérn-3/2 + Periodic(J=3) (ten chains
// of state 10 with diagonal sites, one coupled chain of state 100 with
// full ones); ST10 the same temporal kernel times a separable Matérn-3/2
// kernel over the hubs' positions (one coupled chain of state 100).
func BenchmarkOnlineBin(b *testing.B) {
	const np = 10
	rng := rand.New(rand.NewPCG(5, 5))
	feats := make([][]float64, np)
	for k := range feats {
		feats[k] = []float64{rng.Float64() * 1000, rng.Float64() * 1000}
	}
	temporal := func() kernel.Temporal {
		m, _ := kernel.NewMatern32(4, 24)
		p, _ := kernel.NewPeriodic(2, 1, 24, 3)
		s, _ := kernel.NewSum(m, p)
		return s
	}
	graph, err := diffusion.NewGraph(feats, diffusion.GraphOptions{})
	if err != nil {
		b.Fatal(err)
	}
	benchOnlineCity(b)
	for _, kind := range []string{"Indep10", "ST10"} {
		for _, sites := range []Sites{DiagonalSites, FullSites} {
			for _, points := range []int{16, 64} {
				b.Run(fmt.Sprintf("%s/%s/points=%d", kind, sites, points), func(b *testing.B) {
					var m *filter.Model
					if kind == "Indep10" {
						m, err = filter.NewModel(temporal(), nil, nil, np)
					} else {
						x, _ := kernel.NewMaternSpatial(32, kernel.Euclidean, 1, 400)
						y, _ := kernel.NewMaternSpatial(32, kernel.Euclidean, 1, 400)
						sep, _ := kernel.NewSeparable(x, y)
						m, err = filter.NewModel(temporal(), sep, feats, np)
					}
					if err != nil {
						b.Fatal(err)
					}
					lik, err := NewDiffusion(DiffusionOptions{Graph: graph, Lengthscale: 300, Sink: 0.2, Variance: 1, Sites: sites, Points: points})
					if err != nil {
						b.Fatal(err)
					}
					on, err := NewOnline(m, lik, DefaultOnlineOptions())
					if err != nil {
						b.Fatal(err)
					}
					// Hourly bins of demand around 5 with a third of the hubs
					// stocked out, so diffusion acts in every bin.
					bins := make([][]Obs, 256)
					for i := range bins {
						bins[i] = make([]Obs, np)
						for k := range bins[i] {
							y := math.Max(0, 5+2*rng.NormFloat64())
							o := Obs{Y: y, Supply: math.Inf(1)}
							if k%3 == 0 {
								o.Supply = math.Floor(y * 0.7)
								o.Y, o.Censored = o.Supply, true
							}
							bins[i][k] = o
						}
					}
					var res BinResult
					fm, fv, fc := make([]float64, np), make([]float64, np), make([]float64, np*np)
					steps := 0
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						t := float64(i + 1)
						if err := on.Step(t, bins[i%len(bins)], &res); err != nil {
							b.Fatal(err)
						}
						if err := on.Forecast(t+1, fm, fv, fc); err != nil {
							b.Fatal(err)
						}
						steps += res.Steps
					}
					b.ReportMetric(float64(steps)/float64(b.N), "cvi-steps/bin")
				})
			}
		}
	}
}

// benchOnlineCity times the daemon's per-bin work for a city (the
// BenchmarkOnlineBin/City cases), one op = one bin: predict, local CVI refinement with the diffusion likelihood
// (diagonal sites, 64 points) over an 8-nearest-neighbour graph of hubs
// on a jittered 250 m grid, update and a 6-bin forecast. The product
// kernel is Independent over Matérn-3/2 + Periodic 24 h, so the per-bin
// cost should be linear in the number of products. Besides the wall clock
// it reports the process's CPU time per bin and product (cpu-ns/product).
func benchOnlineCity(b *testing.B) {
	for _, np := range []int{500, 2000} {
		b.Run(fmt.Sprintf("City%d", np), func(b *testing.B) {
			on, bins := benchCity(b, np, 7)
			timeCityBins(b, on, bins, np)
		})
	}
}

// BenchmarkOnlineBinSupplied is BenchmarkOnlineBin/City with every hub's
// supply known, as a bike-share feed reports it and `dcgpd simulate
// --city` lays it out: a stock of 8 to 30 bikes, demand around 5, and one
// hub in twenty stocked out in a bin (its supply below its demand). Few
// stations are then near their supply, which the point loop's shortcuts
// use (docs/city-scale.md).
func BenchmarkOnlineBinSupplied(b *testing.B) {
	for _, np := range []int{500, 2000} {
		b.Run(fmt.Sprintf("City%d", np), func(b *testing.B) {
			on, bins := benchCity(b, np, 7)
			rng := rand.New(rand.NewPCG(9, 9))
			for _, bin := range bins {
				suppliedCityBin(rng, bin)
			}
			timeCityBins(b, on, bins, np)
		})
	}
}

// suppliedCityBin fills bin with BenchmarkOnlineBinSupplied's
// observations: demand around 5, a stock of 8 to 30, one hub in twenty
// stocked out.
func suppliedCityBin(rng *rand.Rand, bin []Obs) {
	for k := range bin {
		y := math.Max(0, 5+2*rng.NormFloat64())
		o := Obs{Y: y, Supply: float64(8 + rng.IntN(23))}
		if rng.IntN(20) == 0 {
			o.Supply = math.Floor(y * 0.7)
			o.Y, o.Censored = o.Supply, true
		}
		bin[k] = o
	}
}

// timeCityBins times one bin per op (step and a 6-bin forecast) and
// reports CVI steps, localised steps, wall and CPU time per product.
func timeCityBins(b *testing.B, on *Online, bins [][]Obs, np int) {
	var res BinResult
	fm, fv := make([]float64, np), make([]float64, np)
	steps, local := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := procstat.CPU()
	for i := 0; i < b.N; i++ {
		t := float64(i + 1)
		if err := on.Step(t, bins[i%len(bins)], &res); err != nil {
			b.Fatal(err)
		}
		if err := on.ForecastSteps(1, 6, fm, fv, nil, func(int) {}); err != nil {
			b.Fatal(err)
		}
		steps += res.Steps
		local += on.localSteps
	}
	cpu := procstat.CPU() - cpu0
	b.ReportMetric(float64(steps)/float64(b.N), "cvi-steps/bin")
	b.ReportMetric(float64(local)/float64(b.N), "local-steps/bin")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(np), "ns/product")
	// CPU time (the process's, GC included) per bin and product: on a
	// shared machine the wall clock also counts other jobs' turns.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(np), "cpu-ns/product")
}

// cityOnline returns the online inference of a city of np hubs on a
// jittered 250 m grid with an 8-nearest-neighbour diffusion graph and
// diagonal sites, and 64 bins of hourly demand around 5 with a third of
// the hubs stocked out.
func cityOnline(tb testing.TB, np int, seed uint64) (*Online, [][]Obs) {
	return cityOnlineWith(tb, np, seed, DiffusionRoutes{}, DefaultOnlineOptions())
}

// cityOnlineWith is cityOnline with the diffusion's routes and the online
// options given.
func cityOnlineWith(tb testing.TB, np int, seed uint64, routes DiffusionRoutes, opts OnlineOptions) (*Online, [][]Obs) {
	rng := rand.New(rand.NewPCG(seed, seed))
	side := int(math.Ceil(math.Sqrt(float64(np))))
	feats := make([][]float64, np)
	for k := range feats {
		feats[k] = []float64{250*float64(k%side) + 50*rng.NormFloat64(), 250*float64(k/side) + 50*rng.NormFloat64()}
	}
	graph, err := diffusion.NewGraph(feats, diffusion.GraphOptions{K: 8})
	if err != nil {
		tb.Fatal(err)
	}
	m32, _ := kernel.NewMatern32(4, 24)
	per, _ := kernel.NewPeriodic(2, 1, 24, 3)
	temporal, _ := kernel.NewSum(m32, per)
	m, err := filter.NewModel(temporal, nil, nil, np)
	if err != nil {
		tb.Fatal(err)
	}
	lik, err := NewDiffusion(DiffusionOptions{Graph: graph, Lengthscale: 300, Sink: 0.2, Variance: 1, Sites: DiagonalSites, Routes: routes})
	if err != nil {
		tb.Fatal(err)
	}
	on, err := NewOnline(m, lik, opts)
	if err != nil {
		tb.Fatal(err)
	}
	bins := make([][]Obs, 64)
	for i := range bins {
		bins[i] = make([]Obs, np)
		for k := range bins[i] {
			y := math.Max(0, 5+2*rng.NormFloat64())
			o := Obs{Y: y, Supply: math.Inf(1)}
			if k%3 == 0 {
				o.Supply = math.Floor(y * 0.7)
				o.Y, o.Censored = o.Supply, true
			}
			bins[i][k] = o
		}
	}
	return on, bins
}

// benchOnline returns the city benchmarks' online options: the defaults,
// with the refinement's localised steps off when DCGPD_WHOLE_STEPS=1 (to
// compare with every step on the whole bin).
func benchOnline() OnlineOptions {
	o := DefaultOnlineOptions()
	o.WholeBinSteps = os.Getenv("DCGPD_WHOLE_STEPS") == "1"
	return o
}

// benchCity is cityOnline with benchOnline's options.
func benchCity(b *testing.B, np int, seed uint64) (*Online, [][]Obs) {
	return cityOnlineWith(b, np, seed, DiffusionRoutes{}, benchOnline())
}
