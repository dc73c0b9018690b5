package daemon

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dcgpd/dcgpd/stream/csvio"
	"github.com/dcgpd/dcgpd/stream/gbfs"
)

// TestStationsFileReadsAsProducts: the stations file the daemon writes
// from station_information is read by the models' own products reader
// as the same stations, sorted by id: lat,lon features (geographic) and
// the capacity column (empty, 0, where the feed gives none); ids with
// colons or commas survive.
func TestStationsFileReadsAsProducts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "demo.stations.csv")
	in := []gbfs.StationInfo{
		{ID: "bcn:2", Lat: 41.3955, Lon: 2.1776, Capacity: 27},
		{ID: "72", Lat: 40.76727216, Lon: -73.99392888, Capacity: 55},
		{ID: "a,b", Lat: 40.7, Lon: -74, Capacity: -1},
	}
	if err := writeStations(path, in); err != nil {
		t.Fatal(err)
	}
	n, err := countStations(path)
	if err != nil || n != 3 {
		t.Fatalf("count %d, %v", n, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := csvio.ReadProducts(f, path)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Geographic || !reflect.DeepEqual(p.Names, []string{"72", "a,b", "bcn:2"}) ||
		!reflect.DeepEqual(p.Features, [][]float64{{40.76727216, -73.99392888}, {40.7, -74}, {41.3955, 2.1776}}) ||
		!reflect.DeepEqual(p.Capacity, []float64{55, 0, 27}) {
		t.Errorf("read back %+v", p)
	}
}
