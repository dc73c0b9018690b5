package cvi

import (
	"fmt"
	"github.com/dcgpd/dcgpd/internal/procstat"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/filter"
)

// BenchmarkResmoothCity times the daemon's re-smooth of a window of hourly
// bins at city size, one op = one re-smooth: batch CVI over the window
// (Converge(1, 1e-9, 500), the daemon's call) with the diffusion likelihood
// (diagonal sites, 8-nearest-neighbour graph), warm-started from the
// online path's sites as the daemon does, and the smoothed marginals, on
// all cores (the engine evaluates bins in parallel). The online pass that
// gives the warm start is not timed. cpu-s/op is the process's CPU time
// (user + system) per re-smooth, which a shared machine disturbs less than
// the wall clock; elbo is the converged ELBO; peak-heap-MB the largest
// live heap sampled every 20 ms from the start of the timed loop (it
// includes what the untimed set-up still holds); stop-max-sd and
// stop-rms-sd the last stopping test's step (engine_coupled.go). With more
// than 64 products Converge takes the coupled site update; set
// DCGPD_DIAGONAL_UPDATE=1 to time CVI's diagonal update instead.
// City2000/bins=168 is the size; run it alone:
//
//	go test -run XXX -bench 'ResmoothCity/City2000' -benchtime 1x -benchmem ./cvi/
func BenchmarkResmoothCity(b *testing.B) {
	for _, c := range []struct{ np, bins int }{{500, 48}, {2000, 168}} {
		b.Run(fmt.Sprintf("City%d/bins=%d", c.np, c.bins), func(b *testing.B) {
			on, bins := benchCity(b, c.np, 9) // the warm start's online pass
			m, lik := on.model, on.lik
			data := &Data{NP: c.np, Times: make([]float64, c.bins)}
			warm := filter.NewSites(c.bins, c.np, false)
			var res BinResult
			for i := range data.Times {
				data.Times[i] = float64(i)
				obs := bins[i%len(bins)]
				data.Obs = append(data.Obs, obs...)
				if err := on.Step(data.Times[i], obs, &res); err != nil {
					b.Fatal(err)
				}
				l1, l2 := warm.Bin(i)
				copy(l1, res.Nat1)
				copy(l2, res.Nat2)
			}
			iters, elbo := 0, 0.0
			var last stepTest
			b.ReportAllocs()
			peak := samplePeakHeap()
			b.ResetTimer()
			cpu0 := procstat.CPU()
			for i := 0; i < b.N; i++ {
				e, err := NewEngine(m, lik, data)
				if err != nil {
					b.Fatal(err)
				}
				if err := e.SetSites(warm); err != nil {
					b.Fatal(err)
				}
				e.DiagonalUpdate = os.Getenv("DCGPD_DIAGONAL_UPDATE") == "1"
				n, el, err := e.Converge(1, 1e-9, 500)
				if err != nil {
					b.Fatal(err)
				}
				iters, elbo, last = iters+n, el, e.lastTest
				var post filter.Posterior
				if err := e.PredictAll(&post); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((procstat.CPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(peak())/1e6, "peak-heap-MB")
			b.ReportMetric(last.mean, "stop-max-sd")
			b.ReportMetric(last.rms, "stop-rms-sd")
			b.ReportMetric(float64(iters)/float64(b.N), "cvi-iters")
			b.ReportMetric(elbo, "elbo")
		})
	}
}

// samplePeakHeap samples runtime.MemStats.HeapAlloc every 20 ms until the
// returned function is called, which returns the largest value seen.
func samplePeakHeap() func() uint64 {
	var peak atomic.Uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > peak.Load() {
			peak.Store(ms.HeapAlloc)
		}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		sample()
		return peak.Load()
	}
}
