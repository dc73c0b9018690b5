package cvi

import (
	"fmt"
	"sync"
	"testing"

	"github.com/dcgpd/dcgpd/internal/procstat"
)

// BenchmarkOnlineBinTwoFlows times a bike-share city's per-bin work with
// one flow modelled (pickups, as the daemon runs today) and with both
// flows (a pickups model and a returns model over the same stations,
// each with its own censoring), one op = one bin: each model's predict,
// local CVI refinement with the diffusion likelihood, update and a
// 24-bin forecast (the risk's horizon). The two models are independent
// and, as in the daemon (one runner goroutine per model), step
// concurrently: each on a goroutine of its own per bin, the bin done when
// both are:
//
//	go test -run XXX -bench OnlineBinTwoFlows -benchtime 20x ./cvi/
func BenchmarkOnlineBinTwoFlows(b *testing.B) {
	for _, np := range []int{500, 2000} {
		for _, flows := range []int{1, 2} {
			b.Run(fmt.Sprintf("City%d/flows=%d", np, flows), func(b *testing.B) {
				ons := make([]*Online, flows)
				bins := make([][][]Obs, flows)
				res := make([]BinResult, flows)
				fm, fv := make([][]float64, flows), make([][]float64, flows)
				for f := range flows {
					ons[f], bins[f] = benchCity(b, np, uint64(7+f))
					fm[f], fv[f] = make([]float64, np), make([]float64, np)
				}
				errs := make([]error, flows)
				stepFlow := func(f int, t float64, i int) {
					on := ons[f]
					if errs[f] = on.Step(t, bins[f][i%len(bins[f])], &res[f]); errs[f] == nil {
						errs[f] = on.ForecastSteps(1, 24, fm[f], fv[f], nil, func(int) {})
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := procstat.CPU()
				for i := 0; i < b.N; i++ {
					t := float64(i + 1)
					var wg sync.WaitGroup
					for f := 1; f < flows; f++ {
						wg.Go(func() { stepFlow(f, t, i) })
					}
					stepFlow(0, t, i)
					wg.Wait()
					for _, err := range errs {
						if err != nil {
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
