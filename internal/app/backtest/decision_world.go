package backtest

import (
	"math"
	"math/rand/v2"
)

// Two-flow world: the censoring simulation of the held-out bike benchmark
// extended to both flows and to full docks. Each station's inventory lives
// on 0..capacity; within a bin the bin's pickups and returns (the real
// counts, taken as the true demand) happen one by one in an order drawn
// once per station and bin (eventOrder); a pickup at 0 bikes and a return
// at a full station are unmet.

// eventOrder writes the order of p pickups (true) and d returns (false)
// in bin i of station k into buf: a uniformly random interleaving, which
// is the order of p + d arrival times drawn independently and uniformly
// over the bin (the Poisson process the inventory chain assumes, given
// the counts). It depends only on (seed, k, i), so every policy replays a
// bin in the same order (common random numbers).
func eventOrder(seed uint64, k, i, p, d int, buf []bool) []bool {
	buf = buf[:0]
	for range p {
		buf = append(buf, true)
	}
	for range d {
		buf = append(buf, false)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(i)<<16|uint64(k)))
	rng.Shuffle(len(buf), func(a, b int) { buf[a], buf[b] = buf[b], buf[a] })
	return buf
}

// replay runs events (true = pickup) on an inventory x of a station with
// c docks and returns the new inventory, the pickups and returns served
// and unmet, and whether it was empty or full at some point (including
// the start).
type replayResult struct {
	x                 int
	servedP, servedR  int
	unmetP, unmetR    int
	wasEmpty, wasFull bool
}

func replay(x, c int, events []bool) replayResult {
	r := replayResult{wasEmpty: x == 0, wasFull: x == c}
	for _, pickup := range events {
		switch {
		case pickup && x > 0:
			x--
			r.servedP++
		case pickup:
			r.unmetP++
		case x < c:
			x++
			r.servedR++
		default:
			r.unmetR++
		}
		r.wasEmpty = r.wasEmpty || x == 0
		r.wasFull = r.wasFull || x == c
	}
	r.x = x
	return r
}

// DayReplay is one station's operating day replayed from a starting
// inventory, with no transfers between stations (each station alone, as
// the inventory chain models it).
type DayReplay struct {
	UnmetPickups, UnmetReturns int
	// EmptyBy[h−1] and FullBy[h−1] report whether the station was empty
	// (full) at some time in the first h bins.
	EmptyBy, FullBy []bool
}

// replayDay replays bins from..from+len(dst.EmptyBy)−1 of station k from
// s0 bikes. pick and ret are bin × station counts.
func replayDay(seed uint64, k, c, s0, from int, pick, ret [][]float64, dst *DayReplay, buf []bool) []bool {
	x := s0
	dst.UnmetPickups, dst.UnmetReturns = 0, 0
	empty, full := x == 0, x == c
	for h := range dst.EmptyBy {
		i := from + h
		buf = eventOrder(seed, k, i, int(pick[i][k]), int(ret[i][k]), buf)
		r := replay(x, c, buf)
		x = r.x
		dst.UnmetPickups += r.unmetP
		dst.UnmetReturns += r.unmetR
		empty, full = empty || r.wasEmpty, full || r.wasFull
		dst.EmptyBy[h], dst.FullBy[h] = empty, full
	}
	return buf
}

// WorldConfig is the history's protocol: the inventory is restocked at
// RestockHour every day to round(U(Low, High)·capacity) bikes, and the
// riders a station turns away go on to another station by Transfer
// (row k: the probability that a rider turned away at k tries j; the
// rest of the row gives up), once.
type WorldConfig struct {
	Seed        uint64
	RestockHour int
	Low, High   float64
	Transfer    [][]float64
}

// History is what the stations recorded under the history's protocol:
// per bin and station the pickups and returns served (their own riders'
// and those sent on by neighbours), whether any pickup or return was
// turned away there (the flow was censored: its demand was above what
// was served), and the inventory at the start of every bin.
type History struct {
	Pickups, Returns                 [][]float64
	PickupsCensored, ReturnsCensored [][]bool
	Start                            [][]int
	UnmetPickups, UnmetReturns       float64 // riders lost after the transfer
}

// SimulateHistory replays the true pickups and returns (bin × station,
// bin 0 starting at hour hour0 of the day) of stations with the given
// capacities under cfg. Within a bin each station first serves its own
// riders in eventOrder, then the riders sent on by neighbours (pickups
// and returns in a random order; one who is turned away again is lost).
func SimulateHistory(cfg WorldConfig, hour0 int, pick, ret [][]float64, capacity []int) *History {
	n, np := len(pick), len(capacity)
	h := &History{Pickups: fillMatrix(n, np, 0), Returns: fillMatrix(n, np, 0),
		PickupsCensored: boolMatrix(n, np), ReturnsCensored: boolMatrix(n, np), Start: make([][]int, n)}
	stock := newRNG2(cfg.Seed, 1)
	walk := newRNG2(cfg.Seed, 2)
	x := make([]int, np)
	for k := range x {
		x[k] = restock(stock, cfg, capacity[k])
	}
	inP, inR := make([]int, np), make([]int, np)
	var buf []bool
	for i := range n {
		if i > 0 && (hour0+i)%24 == cfg.RestockHour {
			for k := range x {
				x[k] = restock(stock, cfg, capacity[k])
			}
		}
		h.Start[i] = append([]int(nil), x...)
		clear(inP)
		clear(inR)
		for k := range np {
			buf = eventOrder(cfg.Seed, k, i, int(pick[i][k]), int(ret[i][k]), buf)
			r := replay(x[k], capacity[k], buf)
			x[k] = r.x
			h.Pickups[i][k], h.Returns[i][k] = float64(r.servedP), float64(r.servedR)
			h.PickupsCensored[i][k], h.ReturnsCensored[i][k] = r.unmetP > 0, r.unmetR > 0
			send(walk, cfg.Transfer, k, r.unmetP, inP)
			send(walk, cfg.Transfer, k, r.unmetR, inR)
			h.UnmetPickups += float64(r.unmetP)
			h.UnmetReturns += float64(r.unmetR)
		}
		for k := range np {
			if inP[k]+inR[k] == 0 {
				continue
			}
			buf = eventOrder(cfg.Seed^0x9e3779b97f4a7c15, k, i, inP[k], inR[k], buf)
			r := replay(x[k], capacity[k], buf)
			x[k] = r.x
			h.Pickups[i][k] += float64(r.servedP)
			h.Returns[i][k] += float64(r.servedR)
			h.PickupsCensored[i][k] = h.PickupsCensored[i][k] || r.unmetP > 0
			h.ReturnsCensored[i][k] = h.ReturnsCensored[i][k] || r.unmetR > 0
			// Riders sent on were counted as unmet where they started;
			// those served here are not lost.
			h.UnmetPickups -= float64(r.servedP)
			h.UnmetReturns -= float64(r.servedR)
		}
	}
	return h
}

func restock(r *rand.Rand, cfg WorldConfig, c int) int {
	return int(math.Round((cfg.Low + (cfg.High-cfg.Low)*r.Float64()) * float64(c)))
}

// send draws the destination of each of n riders turned away at k from
// row k of t (the row's remainder: the rider gives up) into in.
func send(r *rand.Rand, t [][]float64, k, n int, in []int) {
	if n == 0 || t == nil {
		return
	}
	row := t[k]
	for range n {
		u := r.Float64()
		for j, p := range row {
			if u < p {
				in[j]++
				break
			}
			u -= p
		}
	}
}

func newRNG2(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }
