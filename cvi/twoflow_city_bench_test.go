package cvi

import (
	"fmt"
	"github.com/dcgpd/dcgpd/internal/procstat"
	"testing"
)

// BenchmarkOnlineBinTwoFlows times a bike-share city's per-bin work with
// one flow modelled (pickups, as the daemon runs today) and with both
// flows (a pickups model and a returns model over the same stations,
// each with its own censoring), one op = one bin: each model's predict,
// local CVI refinement with the diffusion likelihood, update and a
// 24-bin forecast (the risk's horizon). The two models are independent
// and run one after the other here, as one runner's bins would:
//
//	go test -run XXX -bench OnlineBinTwoFlows -benchtime 20x ./cvi/
func BenchmarkOnlineBinTwoFlows(b *testing.B) {
	for _, np := range []int{500, 2000} {
		for _, flows := range []int{1, 2} {
			b.Run(fmt.Sprintf("City%d/flows=%d", np, flows), func(b *testing.B) {
				ons := make([]*Online, flows)
				bins := make([][][]Obs, flows)
				for f := range flows {
					ons[f], bins[f] = benchCity(b, np, uint64(7+f))
				}
				var res BinResult
				fm, fv := make([]float64, np), make([]float64, np)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := procstat.CPU()
				for i := 0; i < b.N; i++ {
					t := float64(i + 1)
					for f, on := range ons {
						if err := on.Step(t, bins[f][i%len(bins[f])], &res); err != nil {
							b.Fatal(err)
						}
						if err := on.ForecastSteps(1, 24, fm, fv, nil, func(int) {}); err != nil {
							b.Fatal(err)
						}
					}
				}
				cpu := procstat.CPU() - cpu0
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/bin")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(np), "cpu-ns/station")
			})
		}
	}
}
