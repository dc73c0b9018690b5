package filter

import (
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// stackWorkload is shaped like the paper's Dataset A under DCGP: two
// products, each with its own Matérn-5/2 kernel (a coupled chain of state
// dimension 6), full 2×2 sites over 400 bins on two regular grids, whose
// steps are equal up to rounding.
func stackWorkload(tb testing.TB) (*Model, []float64, *Sites) {
	k1, err := kernel.NewMatern52(1.3, 1.7)
	if err != nil {
		tb.Fatal(err)
	}
	k2, err := kernel.NewMatern52(0.6, 3.1)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := NewIndependentModel([]kernel.Temporal{k1, k2})
	if err != nil {
		tb.Fatal(err)
	}
	times := make([]float64, 0, 400)
	for i := 0; i < 200; i++ {
		times = append(times, 0.1+float64(i)*(9.9/199))
	}
	for i := 0; i < 200; i++ {
		times = append(times, 10.3+float64(i)*(9.7/199))
	}
	s := randomSites(rand.New(rand.NewPCG(5, 5)), len(times), 2, true, 0)
	return m, times, s
}

// BenchmarkStackA times Filter and SmoothMarginals on stackWorkload, with
// the Posterior reused across calls as CVI does.
func BenchmarkStackA(b *testing.B) {
	m, times, s := stackWorkload(b)
	benchRuns(b, m, times, s, []benchRun{{"Filter", Filter}, {"SmoothMarginals", SmoothMarginals}, {"Smooth", Smooth}})
}
