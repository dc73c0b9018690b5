package inventory

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// benchStation returns a station of capacity c half full with a
// commuter-like forecast of h bins scaled to about c/8 trips a bin at
// the peaks, with forecast variance 1 + m/2.
func benchStation(c, h int) (Station, Forecast, Forecast) {
	lm, mm := dayRates(h)
	lv, mv := make([]float64, h), make([]float64, h)
	scale := math.Max(float64(c)/60, 0.25)
	for k := range h {
		lm[k] *= scale
		mm[k] *= scale
		lv[k], mv[k] = 1+lm[k]/2, 1+mm[k]/2
	}
	return Station{Capacity: c, Bikes: c / 2}, Forecast{lm, lv}, Forecast{mm, mv}
}

// BenchmarkRisk is one station's risk per call (default configuration,
// uncertainty integrated), by capacity C and horizon H.
func BenchmarkRisk(b *testing.B) {
	for _, size := range []struct{ c, h int }{{10, 24}, {20, 24}, {40, 24}, {80, 24}, {80, 96}} {
		b.Run(fmt.Sprintf("C=%d/H=%d", size.c, size.h), func(b *testing.B) {
			st, lam, mu := benchStation(size.c, size.h)
			pl, err := NewPlanner(DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			var r Risk
			b.ReportAllocs()
			for b.Loop() {
				if err := pl.Risk(&r, st, lam, mu); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRiskAtRates is the same for known rates (the plug-in).
func BenchmarkRiskAtRates(b *testing.B) {
	for _, size := range []struct{ c, h int }{{10, 24}, {20, 24}, {40, 24}, {80, 24}} {
		b.Run(fmt.Sprintf("C=%d/H=%d", size.c, size.h), func(b *testing.B) {
			st, lam, mu := benchStation(size.c, size.h)
			pl, err := NewPlanner(DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			var r Risk
			b.ReportAllocs()
			for b.Loop() {
				if err := pl.RiskAtRates(&r, st, lam.Mean, mu.Mean); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRiskCity is one bin's risk output for a city, one op = every
// station once: 2,000 stations with capacities 15 to 80 (evenly spread),
// H = 24, each station's peak rates about capacity/8 trips a bin, the
// default configuration (uncertainty integrated). ns/station is the cost
// per station.
func BenchmarkRiskCity(b *testing.B) {
	const n, h = 2000, 24
	type station struct {
		st      Station
		lam, mu Forecast
	}
	city := make([]station, n)
	for i := range city {
		c := 15 + (i*66)/n
		st, lam, mu := benchStation(c, h)
		city[i] = station{st, lam, mu}
	}
	for _, integrated := range []bool{true, false} {
		name := "integrated"
		if !integrated {
			name = "plugin"
		}
		b.Run(fmt.Sprintf("stations=%d/H=%d/%s", n, h, name), func(b *testing.B) {
			pl, err := NewPlanner(DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			var r Risk
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range city {
					if integrated {
						err = pl.Risk(&r, s.st, s.lam, s.mu)
					} else {
						err = pl.RiskAtRates(&r, s.st, s.lam.Mean, s.mu.Mean)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/station")
		})
	}
}

// BenchmarkRiskCityWorkers is BenchmarkRiskCity's integrated op (every
// station of the city once) with the stations shared among GOMAXPROCS
// goroutines, each with its own Planner, each taking the next station
// from a shared counter: the chain's own speed-up with cores, without
// the daemon's encoding around it. Run it with -cpu 1,2.
func BenchmarkRiskCityWorkers(b *testing.B) {
	const n, h = 2000, 24
	type station struct {
		st      Station
		lam, mu Forecast
	}
	city := make([]station, n)
	for i := range city {
		st, lam, mu := benchStation(15+(i*66)/n, h)
		city[i] = station{st, lam, mu}
	}
	workers := runtime.GOMAXPROCS(0)
	planners := make([]*Planner, workers)
	for w := range planners {
		pl, err := NewPlanner(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		planners[w] = pl
	}
	b.ReportAllocs()
	for b.Loop() {
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, pl := range planners {
			wg.Go(func() {
				var r Risk
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					if err := pl.Risk(&r, city[i].st, city[i].lam, city[i].mu); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/station")
}
