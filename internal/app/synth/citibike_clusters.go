package synth

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/dcgpd/dcgpd/internal/geo"
)

// CitiBikeDir is the Citi Bike data directory relative to the repository
// root (the shared tree beside it; never copied into the repository).
const CitiBikeDir = "../shared/data/citibike"

// BikeCluster is a group of neighbouring stations: the K nearest stations
// (by great-circle distance) around a seed station, the seed included.
type BikeCluster struct {
	Name     string
	Seed     int
	Stations []int
}

// ReadBikeStations returns every station of the Citi Bike directory dir,
// sorted by ID.
func ReadBikeStations(dir string) ([]BikeStation, error) {
	f, r, err := openCSV(filepath.Join(dir, citiBikeStations), []string{"station", "name", "lat", "lon", "capacity"})
	if err != nil {
		return nil, err
	}
	var ids []int
	for {
		rec, err := r.Read()
		if err != nil {
			break
		}
		var id int
		if _, err := fmt.Sscan(rec[0], &id); err != nil {
			f.Close()
			return nil, fmt.Errorf("synth: citibike stations: %q is not a station ID", rec[0])
		}
		ids = append(ids, id)
	}
	f.Close()
	slices.Sort(ids)
	return readBikeStations(filepath.Join(dir, citiBikeStations), ids)
}

// greatCircleM is the great-circle distance in metres.
func greatCircleM(a, b BikeStation) float64 {
	return geo.Haversine(a.Lat, a.Lon, b.Lat, b.Lon)
}

// NeighbourClusters picks n clusters of the k nearest stations around
// seeds far apart, by geography only: the first seed is the station
// farthest from the stations' centroid, each next seed the station
// farthest from the seeds so far (farthest-point sampling). Clusters may
// share stations when k·n exceeds what the seeds' neighbourhoods hold
// apart. Deterministic; ties go to the lower station ID.
func NeighbourClusters(stations []BikeStation, n, k int) ([]BikeCluster, error) {
	if n < 1 || k < 2 || k > len(stations) || n > len(stations) {
		return nil, fmt.Errorf("synth: %d clusters of %d stations from %d stations", n, k, len(stations))
	}
	var c BikeStation
	for _, s := range stations {
		c.Lat += s.Lat / float64(len(stations))
		c.Lon += s.Lon / float64(len(stations))
	}
	far := func(dist func(BikeStation) float64) int {
		best, bd := -1, -1.0
		for i, s := range stations {
			if d := dist(s); d > bd {
				best, bd = i, d
			}
		}
		return best
	}
	seeds := []int{far(func(s BikeStation) float64 { return greatCircleM(s, c) })}
	for len(seeds) < n {
		seeds = append(seeds, far(func(s BikeStation) float64 {
			m := math.Inf(1)
			for _, i := range seeds {
				m = math.Min(m, greatCircleM(s, stations[i]))
			}
			return m
		}))
	}
	out := make([]BikeCluster, n)
	for j, si := range seeds {
		idx := make([]int, len(stations))
		for i := range idx {
			idx[i] = i
		}
		seed := stations[si]
		sort.SliceStable(idx, func(a, b int) bool {
			return greatCircleM(seed, stations[idx[a]]) < greatCircleM(seed, stations[idx[b]])
		})
		ids := make([]int, k)
		for i := range ids {
			ids[i] = stations[idx[i]].ID
		}
		out[j] = BikeCluster{Name: fmt.Sprintf("citibike-%d", seed.ID), Seed: seed.ID, Stations: ids}
	}
	return out, nil
}

// CitiBikeWindow is the benchmark's window, 2018-06-01 00:00 … 2018-08-01
// 00:00 (1465 hours, the paper's bike window).
var CitiBikeWindow = [2]time.Time{time.Date(2018, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2018, 8, 1, 0, 0, 0, 0, time.UTC)}

// ClusterBikeConfig returns the held-out benchmark's protocol for counts c:
// each station's stock is restocked at every midnight to
// U(0.3, 0.8)·capacity and otherwise follows the drop-off/pickup balance
// (dailySupply); unmet pickups move to the other stations with weights
// exp(−d²/(2ℓ²)), ℓ = lengthscaleM metres, a fraction sink of each
// excess lost; 30% of the hours are held out at random.
func ClusterBikeConfig(c *BikeCounts, seed uint64, lengthscaleM, sink float64) BikeConfig {
	np := len(c.Stations)
	lo, hi := make([]float64, np), make([]float64, np)
	for k, s := range c.Stations {
		lo[k], hi[k] = 0.3*float64(s.Capacity), 0.8*float64(s.Capacity)
	}
	return BikeConfig{Seed: seed, SupplyLow: lo, SupplyHigh: hi, DiffLengthscaleM: lengthscaleM, Sink: sink, TestFrac: 0.3}
}
