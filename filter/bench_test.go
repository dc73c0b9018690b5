package filter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
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
			k, _ := NewMatern32(peerS2F, peerEll)
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
