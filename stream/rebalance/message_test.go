package rebalance

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStationRiskKeepsZeroInventory: a station with a risk keeps
// "bikes" and "capacity" in its JSON when they are 0, as the documented
// schema shows them (an empty station is the case a dispatcher most
// needs to see).
func TestStationRiskKeepsZeroInventory(t *testing.T) {
	cases := []struct {
		name string
		sr   StationRisk
		want []string
	}{
		{"empty", StationRisk{Station: "a", Status: StatusOK, Capacity: 12, Bikes: 0}, []string{`"bikes":0`, `"capacity":12`}},
		{"no docks", StationRisk{Station: "b", Status: StatusOK, Capacity: 0, Bikes: 0}, []string{`"bikes":0`, `"capacity":0`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(&tc.sr)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(data), w) {
					t.Errorf("%s lacks %s", data, w)
				}
			}
		})
	}
}
