package test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/internal/app/flowsim"
	"github.com/dcgpd/dcgpd/internal/app/synth"
)

// derivedFlowsSeed is the simulation's fixed seed.
const derivedFlowsSeed = 35

// TestDerivedFlowsCitiBike measures flows derived from status polls
// (stream/statusflow) against the real hourly Citi Bike counts, on a
// subset quick enough for the default run: the first 10 stations of
// stations.csv, 1–7 June 2018. The full month on all 30 stations is
// TestLongDerivedFlowsCitiBike. The table is recorded in
// testdata/golden/TestDerivedFlowsCitiBike.golden; rewrite it with
//
//	go test -run TestDerivedFlowsCitiBike ./test/ -args -update
func TestDerivedFlowsCitiBike(t *testing.T) {
	skipWithoutCitiBike(t)
	derivedFlows(t, 10, 7)
}

// TestLongDerivedFlowsCitiBike is the same measurement on all 30
// stations over June 2018 (about 13 times the work), recorded in
// testdata/golden/TestLongDerivedFlowsCitiBike.golden. Long mode:
//
//	DCGPD_LONG=1 go test -run TestLongDerivedFlowsCitiBike -v ./test/ -args -update
func TestLongDerivedFlowsCitiBike(t *testing.T) {
	requireLongMode(t)
	skipWithoutCitiBike(t)
	derivedFlows(t, 30, 30)
}

// derivedFlows simulates the first nst stations over days days from
// 1 June 2018, without trucks and with a truck at a fifth of the
// stations a day, checks the requirements and records the table in
// testdata/golden (recordFigures).
func derivedFlows(t *testing.T, nst, days int) {
	stations, err := synth.ReadBikeStations(citibikeDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(stations) < nst {
		t.Fatalf("%d stations, want %d", len(stations), nst)
	}
	start := time.Date(2018, 6, 1, 0, 0, 0, 0, time.UTC)
	w := &flowsim.World{Start: start}
	var ids []int
	for _, s := range stations[:nst] {
		ids = append(ids, s.ID)
		w.Names = append(w.Names, fmt.Sprint(s.ID))
	}
	counts, err := synth.ReadCitiBike(citibikeDir, synth.BikeQuery{Stations: ids, Start: start, End: start.Add(time.Duration(24*days-1) * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range counts.Stations {
		w.Capacity = append(w.Capacity, s.Capacity)
	}
	w.Pickups, w.Returns = counts.Pickups, counts.Dropoffs
	var table bytes.Buffer
	fmt.Fprintf(&table, "Derived hourly flows against the riders served: Citi Bike, %d stations, %d days from %s, seed %d.\n",
		nst, days, start.Format("2006-01-02"), derivedFlowsSeed)
	for _, trucks := range []float64{0, 0.2} {
		cfg := flowsim.DefaultConfig(derivedFlowsSeed)
		cfg.TruckDaily = trucks
		res, err := flowsim.Run(w, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkDerived(t, res, trucks > 0)
		table.WriteString("\n")
		if err := res.Write(&table, fmt.Sprintf("Trucks: chance %.1f a station a day.", trucks)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("\n%s", table.String())
	recordFigures(t, table.String())
}

// checkDerived asserts what the method promises. Without trucks every
// derived count is a lower bound hour by hour, and ids lose no more than
// counts at the same poll. With trucks, detection off moves nothing and
// detection on moves bikes and leaves no more hours above the truth than
// detection off.
func checkDerived(t *testing.T, res *flowsim.Result, trucks bool) {
	t.Helper()
	byKey := map[flowsim.Variant]flowsim.Score{}
	for _, s := range res.Scores {
		byKey[s.Variant] = s
	}
	for _, s := range res.Scores {
		switch {
		case !trucks && (s.Above != 0 || s.PickupBias > 0 || s.ReturnBias > 0):
			t.Errorf("no trucks, %v: %d hours above the truth, biases %.3f, %.3f (must be lower bounds)", s.Variant, s.Above, s.PickupBias, s.ReturnBias)
		case !trucks && s.IDs && s.PickupBias < byKey[flowsim.Variant{Poll: s.Poll, Detect: s.Detect}].PickupBias:
			t.Errorf("no trucks, %v: ids lose more than counts", s.Variant)
		case trucks && !s.Detect && s.Moved != 0:
			t.Errorf("trucks, %v: %d bikes moved with detection off", s.Variant, s.Moved)
		case trucks && s.Detect && (s.Moved == 0 || s.Above > byKey[flowsim.Variant{Poll: s.Poll, IDs: s.IDs}].Above):
			t.Errorf("trucks, %v: moved %d of %d, %d hours above the truth (detection off: %d)", s.Variant, s.Moved, res.TruckBikes,
				s.Above, byKey[flowsim.Variant{Poll: s.Poll, IDs: s.IDs}].Above)
		}
	}
}
