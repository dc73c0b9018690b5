package flowsim

import (
	"fmt"
	"time"

	"github.com/dcgpd/dcgpd/stream/statusflow"
)

// World is the demand: hourly pickups and returns per station (hour ×
// station, row h is Start + h hours), taken as the riders who come, and
// each station's capacity.
type World struct {
	Start            time.Time
	Names            []string
	Pickups, Returns [][]float64
	Capacity         []int
}

// Config is the simulation's protocol.
type Config struct {
	Seed uint64
	// TruckDaily is each station's chance of one truck visit a day, at a
	// uniform time between TruckFrom and TruckTo hours of the day; a visit
	// moves TruckMin..TruckMax bikes (uniform), one every TruckStep.
	TruckDaily         float64
	TruckFrom, TruckTo int
	TruckMin, TruckMax int
	TruckStep          time.Duration
	// Tick is the finest poll; Polls are the poll intervals measured,
	// multiples of Tick dividing an hour.
	Tick  time.Duration
	Polls []time.Duration
	// Deriver is the derivation's configuration; Origin and Bin are set
	// to the world's start and an hour, DetectTrucks by each variant.
	Deriver statusflow.Config
}

// DefaultConfig: a truck at a fifth of the stations a day between 6:00
// and 22:00, 5–15 bikes at 10 s a bike; polls every 30 s, 1 min and
// 5 min; statusflow's defaults.
func DefaultConfig(seed uint64) Config {
	return Config{Seed: seed, TruckDaily: 0.2, TruckFrom: 6, TruckTo: 22, TruckMin: 5, TruckMax: 15, TruckStep: 10 * time.Second,
		Tick: 30 * time.Second, Polls: []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute}, Deriver: statusflow.DefaultConfig()}
}

// validate checks cfg against w.
func (cfg *Config) validate(w *World) error {
	np := len(w.Capacity)
	switch {
	case np == 0 || len(w.Pickups) == 0 || len(w.Pickups) != len(w.Returns) || len(w.Names) != np:
		return fmt.Errorf("flowsim: world of %d stations, %d pickup and %d return hours, %d names", np, len(w.Pickups), len(w.Returns), len(w.Names))
	case !(cfg.TruckDaily >= 0 && cfg.TruckDaily <= 1):
		return fmt.Errorf("flowsim: truck chance %v outside 0..1", cfg.TruckDaily)
	case cfg.TruckFrom < 0 || cfg.TruckTo > 24 || cfg.TruckFrom >= cfg.TruckTo:
		return fmt.Errorf("flowsim: truck hours %d..%d", cfg.TruckFrom, cfg.TruckTo)
	case cfg.TruckMin < 1 || cfg.TruckMax < cfg.TruckMin || cfg.TruckStep <= 0:
		return fmt.Errorf("flowsim: truck of %d..%d bikes at %v", cfg.TruckMin, cfg.TruckMax, cfg.TruckStep)
	case cfg.Tick <= 0 || time.Hour%cfg.Tick != 0:
		return fmt.Errorf("flowsim: tick %v does not divide an hour", cfg.Tick)
	}
	for _, p := range cfg.Polls {
		if p <= 0 || p%cfg.Tick != 0 || time.Hour%p != 0 {
			return fmt.Errorf("flowsim: poll %v is not a multiple of the tick %v dividing an hour", p, cfg.Tick)
		}
	}
	for h := range w.Pickups {
		if len(w.Pickups[h]) != np || len(w.Returns[h]) != np {
			return fmt.Errorf("flowsim: hour %d has %d pickups and %d returns for %d stations", h, len(w.Pickups[h]), len(w.Returns[h]), np)
		}
		for k := range np {
			if p, r := w.Pickups[h][k], w.Returns[h][k]; !(p >= 0 && p <= 1e4 && r >= 0 && r <= 1e4) || p != float64(int(p)) || r != float64(int(r)) {
				return fmt.Errorf("flowsim: hour %d station %s: counts %v, %v are not whole numbers in 0..10000", h, w.Names[k], p, r)
			}
		}
	}
	for k, c := range w.Capacity {
		if c < 1 {
			return fmt.Errorf("flowsim: station %s has capacity %d", w.Names[k], c)
		}
	}
	return nil
}
