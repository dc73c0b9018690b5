package synth

import (
	"slices"
	"testing"
)

// TestNeighbourClusters: on a line of stations 1 km apart the seeds are
// the two ends and then the middle, and each cluster is its seed's k
// nearest stations.
func TestNeighbourClusters(t *testing.T) {
	var st []BikeStation
	for i := 0; i < 9; i++ {
		// ~1 km of latitude per station.
		st = append(st, BikeStation{ID: 100 + i, Lat: 40 + 0.009*float64(i), Lon: -74})
	}
	cl, err := NeighbourClusters(st, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []BikeCluster{
		{Name: "citibike-100", Seed: 100, Stations: []int{100, 101, 102}},
		{Name: "citibike-108", Seed: 108, Stations: []int{108, 107, 106}},
		{Name: "citibike-104", Seed: 104, Stations: []int{104, 103, 105}},
	}
	for i := range want {
		if cl[i].Name != want[i].Name || cl[i].Seed != want[i].Seed || !slices.Equal(cl[i].Stations, want[i].Stations) {
			t.Errorf("cluster %d = %+v, want %+v", i, cl[i], want[i])
		}
	}
	if _, err := NeighbourClusters(st, 3, 10); err == nil {
		t.Error("10 stations from 9: no error")
	}
	if d := greatCircleM(st[0], st[1]); d < 990 || d > 1010 {
		t.Errorf("0.009° of latitude = %.1f m, want ~1000", d)
	}
}
