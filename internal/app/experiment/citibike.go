package experiment

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/app/synth"
)

// Citi Bike benchmark settings: three clusters of ten neighbouring
// stations, the diffusion of unmet pickups used to simulate (and assumed
// by DCGP), and the models compared.
const (
	CitiBikeClusters  = 3
	CitiBikeStations  = 10
	CitiBikeDiffM     = 300.0 // diffusion lengthscale, metres
	CitiBikeSink      = 0.2
	citiBikePrefix    = "citibike-"
	citiBikeHarmonics = 6
)

// CitiBikeModels are the held-out benchmark's models: DCGP-f with full
// and with diagonal sites side by side.
var CitiBikeModels = []string{"NCGP", "CGP", "DCGP-full", "DCGP-diag"}

// isCitiBike reports whether ds is a Citi Bike cluster.
func isCitiBike(ds *synth.Dataset) bool { return strings.HasPrefix(ds.Name, citiBikePrefix) }

// CitiBike builds the held-out benchmark's datasets from the Citi Bike
// directory dir: NeighbourClusters(3, 10) of the data's stations, the
// window synth.CitiBikeWindow (two months hourly), supply and transfer
// by synth.ClusterBikeConfig (daily restock, ℓ = 300 m, sink 0.2), 30%
// of the hours held out.
func CitiBike(dir string, seed uint64) ([]*synth.Dataset, error) {
	if seed == 0 {
		seed = 123
	}
	st, err := synth.ReadBikeStations(dir)
	if err != nil {
		return nil, err
	}
	clusters, err := synth.NeighbourClusters(st, CitiBikeClusters, CitiBikeStations)
	if err != nil {
		return nil, err
	}
	out := make([]*synth.Dataset, len(clusters))
	for i, c := range clusters {
		ds, err := CitiBikeCluster(dir, c.Stations, synth.CitiBikeWindow[0], synth.CitiBikeWindow[1], seed)
		if err != nil {
			return nil, err
		}
		ds.Name = c.Name
		out[i] = ds
	}
	return out, nil
}

// CitiBikeCluster builds one Citi Bike dataset of the given stations and
// hourly window with the benchmark's protocol.
func CitiBikeCluster(dir string, stations []int, start, end time.Time, seed uint64) (*synth.Dataset, error) {
	counts, err := synth.ReadCitiBike(dir, synth.BikeQuery{Stations: stations, Start: start, End: end})
	if err != nil {
		return nil, err
	}
	ds, err := synth.Bike(counts, synth.ClusterBikeConfig(counts, seed, CitiBikeDiffM, CitiBikeSink))
	if err != nil {
		return nil, err
	}
	ds.Name = fmt.Sprintf("%s%d", citiBikePrefix, stations[0])
	return ds, nil
}

// citiBikeModel is the benchmark's model: Matérn-3/2 + 24 h periodic with
// six harmonics over hours, variances and noise started from the data, an
// independent product kernel, the simulation's diffusion (ℓ = 300 m,
// sink 0.2) held fixed.
func citiBikeModel(m *spec.Model) {
	m.Temporal = []spec.Temporal{
		{Kernel: "matern32", Lengthscale: 3},
		{Kernel: "periodic", Lengthscale: 1, Period: 24, Harmonics: citiBikeHarmonics, FixedParams: []string{"period"}},
	}
	m.Diffusion = spec.Diffusion{Lengthscale: CitiBikeDiffM, Sink: CitiBikeSink, Steps: 1}
}

// heapPeak samples runtime.MemStats.HeapInuse every 10 ms from start
// until stop and records the largest value above the level at start
// (taken after a GC). Sampling can miss a short spike between samples:
// the peak is a lower bound of the true HeapInuse peak.
type heapPeak struct {
	base, peak uint64
	stopc      chan struct{}
	wg         sync.WaitGroup
	once       sync.Once
	mb         float64
}

func startHeapPeak() *heapPeak {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapPeak{base: ms.HeapInuse, peak: ms.HeapInuse, stopc: make(chan struct{})}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-h.stopc:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				h.peak = max(h.peak, ms.HeapInuse)
			}
		}
	}()
	return h
}

// stop ends sampling (once; later calls return the same) and returns
// the peak above the start, in MB.
func (h *heapPeak) stop() float64 {
	h.once.Do(func() {
		close(h.stopc)
		h.wg.Wait()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		h.peak = max(h.peak, ms.HeapInuse)
		h.mb = float64(h.peak-h.base) / 1e6
	})
	return h.mb
}
