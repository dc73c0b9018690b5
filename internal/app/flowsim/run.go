package flowsim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/dcgpd/dcgpd/stream/statusflow"
)

// Result is a simulation's totals and each variant's score.
type Result struct {
	StationHours               int
	Pickups, Returns           int // riders served: the truth scored against
	UnmetPickups, UnmetReturns int // the counts' riders the simulated stock turned away
	TruckBikes                 int // bikes moved by trucks
	Scores                     []Score
}

// Run simulates w under cfg and scores every variant (each poll interval,
// from counts and from ids, trucks detected or not).
func Run(w *World, cfg Config) (*Result, error) {
	if err := cfg.validate(w); err != nil {
		return nil, err
	}
	scorers, err := newScorers(w, &cfg)
	if err != nil {
		return nil, err
	}
	nh, np := len(w.Pickups), len(w.Capacity)
	nextID := 0
	st := make([]*station, np)
	for k := range np {
		st[k] = newStation(w.Capacity[k], nh, cfg.Seed, k, &nextID)
	}
	poll(w, st, scorers, 0)
	for h := range nh {
		schedule(w, &cfg, st, h)
		for t := time.Duration(h)*time.Hour + cfg.Tick; t <= time.Duration(h+1)*time.Hour; t += cfg.Tick {
			for _, s := range st {
				s.runUntil(t, &cfg)
			}
			poll(w, st, scorers, t)
		}
		if err := collect(w, st, scorers, time.Duration(h+1)*time.Hour); err != nil {
			return nil, err
		}
	}
	if err := collect(w, st, scorers, time.Duration(nh)*time.Hour+cfg.Deriver.MaxGap+cfg.Deriver.TruckWindow); err != nil {
		return nil, err
	}
	return result(st, scorers), nil
}

func newScorers(w *World, cfg *Config) ([]*scorer, error) {
	var out []*scorer
	for _, p := range cfg.Polls {
		for _, ids := range []bool{false, true} {
			for _, det := range []bool{false, true} {
				c := cfg.Deriver
				c.Origin, c.Bin, c.DetectTrucks = w.Start, time.Hour, det
				d, err := statusflow.New(c)
				if err != nil {
					return nil, fmt.Errorf("flowsim: %w", err)
				}
				out = append(out, &scorer{v: Variant{Poll: p, IDs: ids, Detect: det}, d: d})
			}
		}
	}
	return out, nil
}

// schedule pushes hour h's riders and, at the start of a day, the day's
// truck visits.
func schedule(w *World, cfg *Config, st []*station, h int) {
	for k, s := range st {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(h)<<16|uint64(k)))
		interleave(&s.q, r, time.Duration(h)*time.Hour, time.Hour, int(w.Pickups[h][k]), int(w.Returns[h][k]))
	}
	if h%24 != 0 {
		return
	}
	r := rand.New(rand.NewPCG(cfg.Seed^0x7275636b, uint64(h/24)))
	for _, s := range st {
		if r.Float64() >= cfg.TruckDaily {
			continue
		}
		span := int64(cfg.TruckTo-cfg.TruckFrom) * int64(time.Hour)
		at := time.Duration(h)*time.Hour + time.Duration(cfg.TruckFrom)*time.Hour + time.Duration(r.Int64N(span))
		heap.Push(&s.q, event{at: at, kind: truckStart})
	}
}

// poll gives every variant whose interval divides t a sample of each
// station.
func poll(w *World, st []*station, scorers []*scorer, t time.Duration) {
	for _, sc := range scorers {
		if t%sc.v.Poll != 0 {
			continue
		}
		for k, s := range st {
			smp := statusflow.Sample{Station: w.Names[k], At: w.Start.Add(t), Bikes: len(s.bikes), Docks: s.capacity - len(s.bikes),
				Renting: true, Returning: true}
			if sc.v.IDs {
				smp.HasVehicles, smp.Vehicles = true, s.bikes
			}
			if err := sc.d.Add(smp); err != nil && sc.err == nil {
				sc.err = err
			}
		}
	}
}

// collect advances every variant to t and scores the bins it emits.
func collect(w *World, st []*station, scorers []*scorer, t time.Duration) error {
	col := make(map[string]int, len(w.Names))
	for k, n := range w.Names {
		col[n] = k
	}
	for _, sc := range scorers {
		if sc.err != nil {
			return fmt.Errorf("flowsim: %v: %w", sc.v, sc.err)
		}
		bins, err := sc.d.Advance(w.Start.Add(t))
		if err != nil {
			return fmt.Errorf("flowsim: %v: %w", sc.v, err)
		}
		for _, b := range bins {
			h := int(b.Start.Sub(w.Start) / time.Hour)
			if h >= 0 && h < len(w.Pickups) {
				sc.add(b, st[col[b.Station]].hours[h])
			}
		}
	}
	return nil
}

func result(st []*station, scorers []*scorer) *Result {
	r := &Result{}
	for _, s := range st {
		for _, tr := range s.hours {
			r.StationHours++
			r.Pickups += tr.pickups
			r.Returns += tr.returns
			r.UnmetPickups += tr.unmetP
			r.UnmetReturns += tr.unmetR
			r.TruckBikes += tr.truckOut + tr.truckIn
		}
	}
	for _, sc := range scorers {
		r.Scores = append(r.Scores, sc.score())
	}
	return r
}
