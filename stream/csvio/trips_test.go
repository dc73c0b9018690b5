package csvio

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// tripsCSV is a small trip-count export: out of order, a station (b)
// without a row at 09:00, an extra column.
const tripsCSV = "time,station,pickups,dropoffs,note\n" +
	"2024-05-06T09:00:00Z,a,4,1,x\n" +
	"2024-05-06T08:00:00Z,a,2,3,\n" +
	"2024-05-06T08:00:00Z,b,0,5,\n"

// TestReadTrips: each flow becomes the demand of uncensored rows with
// unlimited supply, sorted by time; a missing row is unobserved, or 0
// with zeros.
func TestReadTrips(t *testing.T) {
	type cell struct {
		time, product string
		demand        float64
	}
	for _, tc := range []struct {
		flow  string
		zeros bool
		want  []cell
	}{
		{FlowPickups, false, []cell{{"2024-05-06T08:00:00Z", "a", 2}, {"2024-05-06T08:00:00Z", "b", 0}, {"2024-05-06T09:00:00Z", "a", 4}}},
		{FlowDropoffs, false, []cell{{"2024-05-06T08:00:00Z", "a", 3}, {"2024-05-06T08:00:00Z", "b", 5}, {"2024-05-06T09:00:00Z", "a", 1}}},
		{FlowPickups, true, []cell{{"2024-05-06T08:00:00Z", "a", 2}, {"2024-05-06T08:00:00Z", "b", 0}, {"2024-05-06T09:00:00Z", "a", 4}, {"2024-05-06T09:00:00Z", "b", 0}}},
	} {
		o, err := ReadTrips(strings.NewReader(tripsCSV), "trips.csv", tc.flow, tc.zeros)
		if err != nil {
			t.Fatalf("%s: %v", tc.flow, err)
		}
		var got []cell
		for _, r := range o.Rows {
			if r.Censored || !math.IsInf(r.Supply, 1) {
				t.Errorf("%s: row %+v censored or with a supply", tc.flow, r)
			}
			got = append(got, cell{r.TimeText, r.Product, r.Demand})
		}
		if !reflect.DeepEqual(got, tc.want) || o.Kind != Timestamp {
			t.Errorf("%s zeros=%v: %v, want %v", tc.flow, tc.zeros, got, tc.want)
		}
	}
}

// TestReadTripsErrors: each mistake names the file and line.
func TestReadTripsErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, flow, want string }{
		{"flow", tripsCSV, "returns", `flow "returns": want pickups or dropoffs`},
		{"column", "time,station,pickups\n1,a,2\n", FlowDropoffs, `trips.csv:1: missing column "dropoffs"`},
		{"negative", "time,station,pickups\n1,a,-2\n", FlowPickups, `trips.csv:2: pickups: "-2" is not a count`},
		{"fraction", "time,station,pickups\n1,a,2.5\n", FlowPickups, `trips.csv:2: pickups: "2.5" is not a count`},
		{"duplicate", "time,station,pickups\n1,a,2\n2,a,1\n1,a,3\n", FlowPickups, `trips.csv:4: duplicate row for station "a" at 1 (first on line 2)`},
		{"mixed times", "time,station,pickups\n1,a,2\n2024-05-06T08:00:00Z,a,1\n", FlowPickups, "trips.csv:3: time"},
		{"empty", "time,station,pickups\n", FlowPickups, "trips.csv: no rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ReadTrips(strings.NewReader(tc.in), "trips.csv", tc.flow, false); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestReadStations: a station list is geographic products with
// capacities; Only keeps the stations named, in the list's order.
func TestReadStations(t *testing.T) {
	p, err := ReadStations(strings.NewReader("station,name,lat,lon,capacity\na,\"1 Av, E 1 St\",40.72,-73.98,31\nb,B,40.73,-73.99,\nc,C,40.74,-74.0,19\n"), "st.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Geographic || !reflect.DeepEqual(p.Capacity, []float64{31, 0, 19}) || !reflect.DeepEqual(p.Features[2], []float64{40.74, -74.0}) {
		t.Fatalf("%+v", p)
	}
	only, missing := p.Only([]string{"c", "a", "z"})
	if !reflect.DeepEqual(only.Names, []string{"a", "c"}) || !reflect.DeepEqual(only.Capacity, []float64{31, 19}) || !reflect.DeepEqual(missing, []string{"z"}) {
		t.Errorf("Only: %+v, missing %v", only, missing)
	}
	if k, ok := only.Index("c"); !ok || k != 1 {
		t.Errorf("Index(c) = %d, %v", k, ok)
	}
	for _, tc := range []struct{ in, want string }{
		{"station,name,lon\na,A,1\n", `st.csv:1: missing column "lat"`},
		{"station,lat,lon\na,95,0\n", "st.csv:2: lat,lon (95, 0) out of range"},
		{"station,lat,lon,capacity\na,40,0,-3\n", "st.csv:2: column capacity: -3 is negative"},
		{"station,lat,lon\na,40,0\na,41,0\n", `st.csv:3: duplicate station "a"`},
	} {
		if _, err := ReadStations(strings.NewReader(tc.in), "st.csv"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.in, err, tc.want)
		}
	}
}
