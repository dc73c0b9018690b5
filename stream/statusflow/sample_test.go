package statusflow

import (
	"reflect"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

func TestFromStatus(t *testing.T) {
	snap := time.Date(2024, 5, 6, 8, 0, 30, 0, time.UTC)
	rep := snap.Add(-20 * time.Second)
	docks := 41
	m := &stationstatus.Message{Schema: 1, Feed: "f", At: snap, Stations: []stationstatus.Sample{
		{Station: "72", BikesAvailable: 12, BikesDisabled: 1, DocksAvailable: &docks, DocksDisabled: 1, Installed: true, Renting: true, Returning: true, LastReported: rep},
		{Station: "dockless", BikesAvailable: 3, Installed: false, Renting: true, Returning: true, LastReported: snap.Add(time.Second)},
	}}
	want := []Sample{
		{Station: "72", At: rep, Bikes: 13, Docks: 42, Renting: true, Returning: true},
		{Station: "dockless", At: snap, Bikes: 3, Docks: -1},
	}
	if got := FromStatus(m); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestSetDiff(t *testing.T) {
	for _, tc := range []struct {
		a, b          []string
		left, arrived int
	}{
		{nil, nil, 0, 0},
		{[]string{"a", "b"}, nil, 2, 0},
		{nil, []string{"a"}, 0, 1},
		{[]string{"a", "c", "e"}, []string{"b", "c", "d", "f"}, 2, 3},
	} {
		if l, r := setDiff(tc.a, tc.b); l != tc.left || r != tc.arrived {
			t.Errorf("%v → %v: left %d arrived %d, want %d %d", tc.a, tc.b, l, r, tc.left, tc.arrived)
		}
	}
}
