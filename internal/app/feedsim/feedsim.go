// Package feedsim serves a simulated, changing bike-share system as a
// GBFS 2.3 feed (gbfs.json, station_information.json,
// station_status.json), for the rebalancing quick start and tests: a
// daemon pointed at it sees bikes leave and arrive between its polls.
//
// Each station has a capacity and a pickup and a return rate per second;
// about half the stations drain (pickups outnumber returns) and half
// fill, so that moves are needed within minutes. The state advances one
// second at a time (Poisson pickups and returns, a pickup at an empty
// station and a return at a full one turned away) up to the clock at
// each request, from a seeded generator: the same seed and request
// times give the same feed. Every station reports every second.
package feedsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Config sets the simulated system.
type Config struct {
	// Stations is the number of stations, 1 to len(Names).
	Stations int
	// Seed seeds the capacities, starting stock, rates and flows.
	Seed uint64
	// Rate is the mean of a station's pickups plus returns per second.
	Rate float64
}

// DefaultConfig is twelve stations, seed 1, 0.4 trips a second each.
func DefaultConfig() Config { return Config{Stations: 12, Seed: 1, Rate: 0.4} }

// Names are the simulated stations' names (synthetic, after Manhattan
// street corners around Union Square).
var Names = []string{
	"Astor Pl & Lafayette St", "Union Sq E & E 16 St", "Broadway & E 14 St", "University Pl & E 12 St",
	"Irving Pl & E 15 St", "5 Ave & E 13 St", "Bleecker St & Crosby St", "Cooper Sq & E 7 St",
	"W 13 St & 6 Ave", "E 10 St & 2 Ave", "Broadway & W 4 St", "Bond St & Lafayette St",
	"E 17 St & Park Ave S", "W 16 St & 5 Ave", "St Marks Pl & 1 Ave", "Washington Sq E",
}

// Station is one simulated station.
type Station struct {
	ID, Name               string
	Lat, Lon               float64
	Capacity, Bikes        int
	PickupRate, ReturnRate float64 // per second
}

// Sim is the simulated system; safe for concurrent use.
type Sim struct {
	mu       sync.Mutex
	rng      *rand.Rand
	stations []Station
	at       time.Time // the state is as of this second
}

// New returns a system with its state as of start (truncated to the
// second).
func New(cfg Config, start time.Time) (*Sim, error) {
	if cfg.Stations < 1 || cfg.Stations > len(Names) {
		return nil, fmt.Errorf("feedsim: %d stations, want 1 to %d", cfg.Stations, len(Names))
	}
	if !(cfg.Rate > 0 && cfg.Rate <= 10) {
		return nil, fmt.Errorf("feedsim: rate %v, want (0, 10] trips a second", cfg.Rate)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 35))
	s := &Sim{rng: rng, at: start.Truncate(time.Second)}
	for i := range cfg.Stations {
		capacity := 15 + rng.IntN(21)
		tilt := 0.3 + 0.1*rng.Float64() // share of trips that are pickups at a filling station
		if i%2 == 0 {
			tilt = 1 - tilt // draining
		}
		s.stations = append(s.stations, Station{ID: fmt.Sprintf("%d", 101+i), Name: Names[i],
			Lat: 40.7290 + 0.0025*float64(i/4), Lon: -73.9950 + 0.0030*float64(i%4),
			Capacity: capacity, Bikes: int(math.Round((0.3 + 0.4*rng.Float64()) * float64(capacity))),
			PickupRate: cfg.Rate * tilt, ReturnRate: cfg.Rate * (1 - tilt)})
	}
	return s, nil
}

// maxCatchUp bounds the seconds one request simulates (a clock jump).
const maxCatchUp = 24 * 3600

// advance moves the state to now's second; the caller holds mu.
func (s *Sim) advance(now time.Time) {
	now = now.Truncate(time.Second)
	if n := now.Sub(s.at) / time.Second; n > maxCatchUp {
		s.at = now.Add(-maxCatchUp * time.Second)
	}
	for ; s.at.Before(now); s.at = s.at.Add(time.Second) {
		for i := range s.stations {
			st := &s.stations[i]
			for range poisson(s.rng, st.PickupRate) {
				st.Bikes = max(st.Bikes-1, 0)
			}
			for range poisson(s.rng, st.ReturnRate) {
				st.Bikes = min(st.Bikes+1, st.Capacity)
			}
		}
	}
}

// poisson draws a Poisson count of mean m (small m: Knuth's method).
func poisson(rng *rand.Rand, m float64) int {
	limit, p, k := math.Exp(-m), rng.Float64(), 0
	for p > limit {
		p *= rng.Float64()
		k++
	}
	return k
}

// Snapshot returns the stations as of now (advancing the state) and the
// second the state is for.
func (s *Sim) Snapshot(now time.Time) ([]Station, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(now)
	return append([]Station(nil), s.stations...), s.at
}
