package filter

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// BenchmarkOnlineChains times the filter's share of the daemon's bin for
// independent chains (Matérn-3/2 + Periodic 24 h with 3 harmonics, state
// dimension 10), one op = one bin: SaveTo, Advance, MarginalVar,
// Update, MarginalVar and a 6-bin ForecastStepsVar. With split=false
// every pass runs in one loop (OnlineOptions.SplitMin above N_p).
func BenchmarkOnlineChains(b *testing.B) {
	for _, np := range []int{10, 2000} {
		for _, split := range []bool{false, true} {
			if np < defaultSplitMin && split {
				continue
			}
			b.Run(fmt.Sprintf("N%d/split=%v", np, split), func(b *testing.B) {
				opts := OnlineOptions{}
				if !split {
					opts.SplitMin = np + 1
				}
				m32, _ := kernel.NewMatern32(4, 24)
				per, _ := kernel.NewPeriodic(2, 1, 24, 3)
				sum, _ := kernel.NewSum(m32, per)
				m, err := NewModel(sum, nil, nil, np)
				if err != nil {
					b.Fatal(err)
				}
				o, err := NewOnline(m, opts)
				if err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				l1, l2 := make([]float64, np), make([]float64, np)
				for k := range l1 {
					l2[k] = 0.5 + rng.Float64()
					l1[k] = l2[k] * (5 + rng.NormFloat64())
				}
				mean, vars := make([]float64, np), make([]float64, np)
				var st State
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					o.SaveTo(&st)
					if err := o.Advance(float64(i + 1)); err != nil {
						b.Fatal(err)
					}
					o.MarginalVar(mean, vars)
					if _, err := o.Update(l1, l2); err != nil {
						b.Fatal(err)
					}
					o.MarginalVar(mean, vars)
					if err := o.ForecastStepsVar(1, 6, mean, vars, func(int) {}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
