package filter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// w1Data returns a W1-shaped workload (t = 0..n−1, y = sin(t/7) +
// 0.5cos(t/3) + √0.1·ε) generated in Go: timings do not depend on the
// values (testdata/peers/WORKLOADS.md §"In this copy").
func w1Data(n int) (t, y []float64) {
	rng := rand.New(rand.NewPCG(42, uint64(n)))
	t, y = make([]float64, n), make([]float64, n)
	for i := range t {
		t[i] = float64(i)
		y[i] = math.Sin(t[i]/7) + 0.5*math.Cos(t[i]/3) + math.Sqrt(0.1)*rng.NormFloat64()
	}
	return t, y
}

// BenchmarkFilterSmootherW1 times one full filter + RTS smoother pass on
// the W1 workload with buffers reused across calls (one op = one pass).
func BenchmarkFilterSmootherW1(b *testing.B) {
	for _, n := range []int{100000, 1000000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			t, y := w1Data(n)
			k, _ := kernel.NewMatern32(peerS2F, peerEll)
			m, _ := NewModel(k, nil, nil, 1)
			s := gaussianSites(y, peerS2N)
			var p Posterior
			if err := Smooth(&p, m, t, s); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := Smooth(&p, m, t, s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
		})
	}
}

// BenchmarkFilterStep times one predict + update of one bin for N_p = 10
// products (one op = one bin): ST10 is the paper's spatio-temporal prior
// (Matérn-3/2 + Periodic J=3 over time, Matérn-3/2 × Matérn-3/2 over
// space: state 100, full coupling); Indep10 the Independent kernel with
// the same temporal part (ten chains of dimension 10).
func BenchmarkFilterStep(b *testing.B) {
	const np = 10
	for _, tc := range []struct {
		name  string
		model func() *Model
	}{
		{"ST10", func() *Model { return paperSTModel(b, np, 3) }},
		{"Indep10", func() *Model {
			st := paperSTModel(b, np, 3)
			m, _ := NewModel(st.Temporal().Clone(), nil, nil, np)
			return m
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := tc.model()
			o, err := NewOnline(m, OnlineOptions{})
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			nat1, nat2 := make([]float64, np), make([]float64, np)
			for k := range nat2 {
				nat2[k] = 10
			}
			start := o.Save()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%1000 == 0 {
					// Restart periodically so the state stays typical.
					b.StopTimer()
					_ = o.Restore(start)
					b.StartTimer()
				}
				if err := o.Advance(float64(i%1000) + 1); err != nil {
					b.Fatal(err)
				}
				for k := range nat1 {
					nat1[k] = 10 * rng.NormFloat64()
				}
				if _, err := o.Update(nat1, nat2); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSmoothST10 times a smoothing pass over 130 bins of the paper's
// spatio-temporal prior (state 100, 10 products with diagonal sites), one
// op = one pass: RTS (full smoothed states, O(D³) per bin) against the
// Bryson–Frazier marginals CVI uses (O(N_p·D²) per bin).
func BenchmarkSmoothST10(b *testing.B) {
	m := paperSTModel(b, 10, 3)
	rng := rand.New(rand.NewPCG(2, 2))
	times := make([]float64, 130)
	for i := range times {
		times[i] = float64(i) * 1.3
	}
	s := randomSites(rng, len(times), 10, false, 0.1)
	benchRuns(b, m, times, s, []benchRun{{"RTS", Smooth}, {"Marginals", SmoothMarginals}})
}

// benchRun names one way of running the filter.
type benchRun struct {
	name string
	run  func(*Posterior, *Model, []float64, *Sites) error
}

// benchRuns times each run on the same inputs, with the Posterior reused
// across calls as CVI does.
func benchRuns(b *testing.B, m *Model, times []float64, s *Sites, runs []benchRun) {
	for _, c := range runs {
		b.Run(c.name, func(b *testing.B) {
			var p Posterior
			if err := c.run(&p, m, times, s); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := c.run(&p, m, times, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// indepWorkload is shaped like a CVI fit of hourly demand at many
// stations: np products with the Independent product kernel over a shared
// Matérn-3/2 + Periodic(J=6) temporal kernel (a chain of dimension 16 per
// product), diagonal sites, n hourly bins with a tenth of the sites
// missing.
func indepWorkload(tb testing.TB, np, n int) (*Model, []float64, *Sites) {
	m32, err := kernel.NewMatern32(1.0, 30)
	if err != nil {
		tb.Fatal(err)
	}
	per, err := kernel.NewPeriodic(0.8, 1.0, 24, 6)
	if err != nil {
		tb.Fatal(err)
	}
	sum, err := kernel.NewSum(m32, per)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := NewModel(sum, nil, nil, np)
	if err != nil {
		tb.Fatal(err)
	}
	times := make([]float64, n)
	for i := range times {
		times[i] = float64(i)
	}
	s := randomSites(rand.New(rand.NewPCG(3, uint64(np))), n, np, false, 0.1)
	return m, times, s
}

// BenchmarkIndependentChains times the runs of one chain per product
// (Independent kernel, diagonal sites) on indepWorkload: P30 is the large
// fit whose chains run in parallel, P2 a small one that stays serial.
func BenchmarkIndependentChains(b *testing.B) {
	for _, c := range []struct {
		name  string
		np, n int
	}{{"P30", 30, 500}, {"P2", 2, 100}} {
		b.Run(c.name, func(b *testing.B) {
			m, times, s := indepWorkload(b, c.np, c.n)
			benchRuns(b, m, times, s, []benchRun{{"SmoothMarginals", SmoothMarginals}, {"FilterLogLik", FilterLogLik}, {"Smooth", Smooth}})
		})
	}
}
