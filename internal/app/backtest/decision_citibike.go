package backtest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/dcgpd/dcgpd/internal/app/experiment"
	"github.com/dcgpd/dcgpd/internal/app/synth"
)

// CitiBikeStations reads stations ids of the Citi Bike directory dir
// (counts_2018.csv: time,station,pickups,dropoffs; stations.csv with
// capacity) from start to end (exclusive) as a decision backtest's data,
// with the riders' transfer matrix of the held-out benchmark (unmet trips
// go to the other stations with weights exp(−d²/(2ℓ²)), ℓ = 300 m, 20%
// give up).
func CitiBikeStations(dir string, ids []int, start, end time.Time) (*Stations, [][]float64, error) {
	return CitiBikeStationsFrom(dir, "", ids, start, end)
}

// CitiBikeStationsFrom is CitiBikeStations reading the counts from the
// file countsPath (empty: dir's counts_2018.csv).
func CitiBikeStationsFrom(dir, countsPath string, ids []int, start, end time.Time) (*Stations, [][]float64, error) {
	counts, err := synth.ReadCitiBike(dir, synth.BikeQuery{Stations: ids, Start: start, End: end.Add(-time.Hour), Counts: countsPath})
	if err != nil {
		return nil, nil, err
	}
	ds, err := synth.Bike(counts, synth.ClusterBikeConfig(counts, 1, experiment.CitiBikeDiffM, experiment.CitiBikeSink))
	if err != nil {
		return nil, nil, err
	}
	d := &Stations{Start: counts.Start, Pickups: counts.Pickups, Returns: counts.Dropoffs, Features: ds.Features}
	for _, s := range counts.Stations {
		if s.Capacity < 1 {
			return nil, nil, fmt.Errorf("station %d has capacity %d", s.ID, s.Capacity)
		}
		d.Names = append(d.Names, "p"+strconv.Itoa(s.ID))
		d.Capacity = append(d.Capacity, s.Capacity)
	}
	return d, ds.Transfer, nil
}
