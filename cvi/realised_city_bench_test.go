package cvi

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkRealisedDemandCity times the realised demand of one city bin
// (the hubs of BenchmarkOnlineBinSupplied, the posterior of one online
// step), one op = one bin, to set beside that benchmark's per-bin cost:
//
//	go test -run '^$' -bench 'RealisedDemandCity|OnlineBinSupplied' -benchmem ./cvi/
func BenchmarkRealisedDemandCity(b *testing.B) {
	for _, np := range []int{500, 2000} {
		b.Run(fmt.Sprintf("City%d", np), func(b *testing.B) {
			on, bins := cityOnline(b, np, 7)
			rng := rand.New(rand.NewPCG(9, 9))
			bin := bins[0]
			suppliedCityBin(rng, bin)
			var res BinResult
			if err := on.Step(1, bin, &res); err != nil {
				b.Fatal(err)
			}
			dm, dv := make([]float64, np), make([]float64, np)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := RealisedDemand(on.lik, bin, res.Mean, res.Var, dm, dv); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(np), "ns/product")
		})
	}
}
