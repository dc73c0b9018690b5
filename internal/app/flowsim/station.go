package flowsim

import (
	"container/heap"
	"math/rand/v2"
	"strconv"
	"time"
)

// truth is what happened at one station in one hour.
type truth struct {
	pickups, returns  int // riders served
	unmetP, unmetR    int // riders turned away: empty or full station
	truckOut, truckIn int // bikes moved by trucks
}

// station is one simulated station: its bikes (by id), its pending
// events, and what happened per hour.
type station struct {
	capacity int
	bikes    []string
	q        queue
	rng      *rand.Rand // riders' choice of bike, truck sizes
	hours    []truth
	nextID   *int
}

func newStation(capacity, hours int, seed uint64, k int, nextID *int) *station {
	s := &station{capacity: capacity, rng: rand.New(rand.NewPCG(seed, uint64(k)<<32|1)), hours: make([]truth, hours), nextID: nextID}
	for range (capacity + 1) / 2 {
		s.bikes = append(s.bikes, s.newBike())
	}
	return s
}

func (s *station) newBike() string {
	*s.nextID++
	return "b" + strconv.Itoa(*s.nextID)
}

// runUntil applies the events at or before t (hour h is [h, h+1) hours
// since the start).
func (s *station) runUntil(t time.Duration, cfg *Config) {
	for len(s.q) > 0 && s.q[0].at <= t {
		e := heap.Pop(&s.q).(event)
		h := min(int(e.at/time.Hour), len(s.hours)-1)
		s.apply(e, &s.hours[h], cfg)
	}
}

func (s *station) apply(e event, tr *truth, cfg *Config) {
	switch e.kind {
	case pickup:
		if len(s.bikes) == 0 {
			tr.unmetP++
			return
		}
		s.take()
		tr.pickups++
	case ret:
		if len(s.bikes) >= s.capacity {
			tr.unmetR++
			return
		}
		s.bikes = append(s.bikes, s.newBike())
		tr.returns++
	case truckStart:
		s.dispatch(e.at, cfg)
	case truckOut:
		if len(s.bikes) > 0 {
			s.take()
			tr.truckOut++
		}
	case truckIn:
		if len(s.bikes) < s.capacity {
			s.bikes = append(s.bikes, s.newBike())
			tr.truckIn++
		}
	}
}

// take removes a uniformly chosen bike.
func (s *station) take() {
	i := s.rng.IntN(len(s.bikes))
	s.bikes[i] = s.bikes[len(s.bikes)-1]
	s.bikes = s.bikes[:len(s.bikes)-1]
}

// dispatch schedules a truck's moves: TruckMin..TruckMax bikes, taken
// away when the station is above half full, brought otherwise, one every
// TruckStep (the moves that find the station empty or full do nothing).
func (s *station) dispatch(at time.Duration, cfg *Config) {
	n := cfg.TruckMin + s.rng.IntN(cfg.TruckMax-cfg.TruckMin+1)
	kind := truckIn
	if 2*len(s.bikes) > s.capacity {
		kind = truckOut
	}
	for j := range n {
		heap.Push(&s.q, event{at: at + time.Duration(j)*cfg.TruckStep, kind: kind})
	}
}
