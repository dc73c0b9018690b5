package backtest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcgpd/dcgpd/inventory"
)

// TestEventOrderIsFixedPerStationBin checks the order keeps the counts,
// repeats for the same (seed, station, bin) and changes between bins.
func TestEventOrderIsFixedPerStationBin(t *testing.T) {
	a := eventOrder(7, 3, 100, 5, 4, nil)
	b := eventOrder(7, 3, 100, 5, 4, nil)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, station and bin gave %v and %v", a, b)
	}
	var p int
	for _, e := range a {
		if e {
			p++
		}
	}
	if len(a) != 9 || p != 5 {
		t.Fatalf("order %v: want 5 pickups among 9 events", a)
	}
	differ := 0
	for i := range 20 {
		if !slices.Equal(eventOrder(7, 3, 200+i, 5, 4, nil), a) {
			differ++
		}
	}
	if differ < 15 {
		t.Fatalf("only %d of 20 other bins had another order", differ)
	}
}

// TestReplay checks the event replay at the boundaries.
func TestReplay(t *testing.T) {
	P, R := true, false
	cases := []struct {
		name   string
		x, c   int
		events []bool
		want   replayResult
	}{
		{"served", 2, 5, []bool{P, R, P}, replayResult{x: 1, servedP: 2, servedR: 1}},
		{"runs empty", 1, 5, []bool{P, P, R, P}, replayResult{x: 0, servedP: 2, servedR: 1, unmetP: 1, wasEmpty: true}},
		{"runs full", 4, 5, []bool{R, R, P, R}, replayResult{x: 5, servedP: 1, servedR: 2, unmetR: 1, wasFull: true}},
		{"starts empty", 0, 3, []bool{R}, replayResult{x: 1, servedR: 1, wasEmpty: true}},
		{"no docks", 0, 0, []bool{P, R}, replayResult{x: 0, unmetP: 1, unmetR: 1, wasEmpty: true, wasFull: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := replay(tc.x, tc.c, tc.events); got != tc.want {
				t.Fatalf("replay = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSimulateHistoryConserves checks every rider of the history is
// served at their station, served at a neighbour or lost, and that a
// cell is censored exactly when someone was turned away there.
func TestSimulateHistoryConserves(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n, np = 200, 4
	pick, ret := fillMatrix(n, np, 0), fillMatrix(n, np, 0)
	for i := range n {
		for k := range np {
			pick[i][k], ret[i][k] = float64(rng.IntN(8)), float64(rng.IntN(6))
		}
	}
	capacity := []int{5, 8, 3, 12}
	tr := [][]float64{{0, 0.4, 0.2, 0.2}, {0.3, 0, 0.3, 0.2}, {0.4, 0.4, 0, 0}, {0.2, 0.2, 0.4, 0}}
	for _, transfer := range [][][]float64{nil, tr} {
		h := SimulateHistory(WorldConfig{Seed: 3, RestockHour: 6, Low: 0.3, High: 0.8, Transfer: transfer}, 0, pick, ret, capacity)
		var demand, served float64
		for i := range n {
			for k := range np {
				demand += pick[i][k] + ret[i][k]
				served += h.Pickups[i][k] + h.Returns[i][k]
				if transfer == nil {
					if h.PickupsCensored[i][k] != (h.Pickups[i][k] < pick[i][k]) || h.ReturnsCensored[i][k] != (h.Returns[i][k] < ret[i][k]) {
						t.Fatalf("bin %d station %d: censored flags %v/%v with %v of %v pickups and %v of %v returns served",
							i, k, h.PickupsCensored[i][k], h.ReturnsCensored[i][k], h.Pickups[i][k], pick[i][k], h.Returns[i][k], ret[i][k])
					}
				}
				if x := h.Start[i][k]; x < 0 || x > capacity[k] {
					t.Fatalf("bin %d station %d: inventory %d outside 0..%d", i, k, x, capacity[k])
				}
			}
		}
		if lost := h.UnmetPickups + h.UnmetReturns; math.Abs(demand-served-lost) > 0 || lost <= 0 {
			t.Fatalf("transfer %v: demand %v, served %v, lost %v: riders not conserved (or none lost)", transfer != nil, demand, served, lost)
		}
	}
}

// TestReplayMatchesInventoryChain ties the replay to the chain it is
// scored against: Poisson counts per bin replayed in eventOrder are the
// birth–death chain with those rates, so over many simulated days the
// replay's first passages and unmet trips match inventory's within 4
// standard errors.
func TestReplayMatchesInventoryChain(t *testing.T) {
	const c, s0, days = 12, 5, 20000
	lam := make([]float64, decisionDay)
	mu := make([]float64, decisionDay)
	for h := range lam {
		lam[h] = 1 + 3*math.Exp(-float64((h-3)*(h-3))/4)
		mu[h] = 1 + 3*math.Exp(-float64((h-12)*(h-12))/6)
	}
	pl, err := inventory.NewPlanner(inventory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var r inventory.Risk
	if err := pl.RiskAtRates(&r, inventory.Station{Capacity: c, Bikes: s0}, lam, mu); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	pick, ret := fillMatrix(decisionDay, 1, 0), fillMatrix(decisionDay, 1, 0)
	rep := DayReplay{EmptyBy: make([]bool, decisionDay), FullBy: make([]bool, decisionDay)}
	var buf []bool
	var empty, full [decisionDay]float64
	var up, ur, up2, ur2 float64
	for day := range days {
		for h := range decisionDay {
			pick[h][0], ret[h][0] = poisson(rng, lam[h]), poisson(rng, mu[h])
		}
		buf = replayDay(uint64(day), 0, c, s0, 0, pick, ret, &rep, buf)
		for h := range decisionDay {
			if rep.EmptyBy[h] {
				empty[h]++
			}
			if rep.FullBy[h] {
				full[h]++
			}
		}
		up += float64(rep.UnmetPickups)
		ur += float64(rep.UnmetReturns)
		up2 += float64(rep.UnmetPickups * rep.UnmetPickups)
		ur2 += float64(rep.UnmetReturns * rep.UnmetReturns)
	}
	for h := range decisionDay {
		for _, ev := range []struct {
			name string
			got  float64
			n    float64
		}{{"EmptyWithin", r.EmptyWithin[h], empty[h]}, {"FullWithin", r.FullWithin[h], full[h]}} {
			p := ev.n / days
			se := math.Max(math.Sqrt(p*(1-p)/days), math.Sqrt(ev.got*(1-ev.got)/days))
			if math.Abs(ev.got-p) > 4*se {
				t.Errorf("%s[%d] = %.4f, replayed %.4f ± %.4f", ev.name, h+1, ev.got, p, se)
			}
		}
	}
	for _, m := range []struct {
		name         string
		got, sum, sq float64
	}{{"UnmetPickups", r.UnmetPickups, up, up2}, {"UnmetReturns", r.UnmetReturns, ur, ur2}} {
		mean := m.sum / days
		se := math.Sqrt((m.sq/days - mean*mean) / days)
		if math.Abs(m.got-mean) > 4*se {
			t.Errorf("%s = %.4f, replayed %.4f ± %.4f", m.name, m.got, mean, se)
		}
	}
}

// poisson draws a Poisson count by inversion (small means).
func poisson(r *rand.Rand, m float64) float64 {
	u, p := r.Float64(), math.Exp(-m)
	k, cum := 0, p
	for u > cum {
		k++
		p *= m / float64(k)
		cum += p
	}
	return float64(k)
}
