package charging

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// SynthConfig describes simulated sessions shaped like a workplace garage
// (ACN-Data's Caltech garage in 2021: arrivals peaking in the morning,
// fewer at weekends, a median stay near 1.8 h with a long tail).
type SynthConfig struct {
	// Chargers named c-001, c-002, …; each arrival picks one uniformly.
	Chargers int
	// Start is the first day's midnight (UTC); Days how many days.
	Start time.Time
	Days  int
	// PerDay is the mean number of weekday arrivals (weekends: 0.6×).
	PerDay float64
	// UTCOffset is the garage's local time: the daily profile is in it.
	UTCOffset time.Duration
	// MedianStay and StaySpread set the log-normal stay: its median and
	// the sd of its logarithm.
	MedianStay time.Duration
	StaySpread float64
	Seed       uint64
}

// DefaultSynthConfig is the garage's shape: 42 chargers, 16 weekday
// arrivals a day, Pacific daylight time, a median stay of 1.8 h with log
// sd 1.07 (a mean near 3.2 h).
func DefaultSynthConfig() SynthConfig {
	return SynthConfig{
		Chargers: 42, Start: time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC), Days: 28,
		PerDay: 16, UTCOffset: -7 * time.Hour, MedianStay: 108 * time.Minute, StaySpread: 1.07, Seed: 1,
	}
}

// Validate checks the configuration.
func (c SynthConfig) Validate() error {
	switch {
	case c.Chargers < 1:
		return fmt.Errorf("charging: %d chargers, want at least 1", c.Chargers)
	case c.Days < 1:
		return fmt.Errorf("charging: %d days, want at least 1", c.Days)
	case !(c.PerDay > 0) || math.IsInf(c.PerDay, 0):
		return fmt.Errorf("charging: %v arrivals a day must be positive and finite", c.PerDay)
	case c.MedianStay <= 0:
		return fmt.Errorf("charging: median stay %v must be positive", c.MedianStay)
	case !(c.StaySpread >= 0) || c.StaySpread > 5:
		return fmt.Errorf("charging: stay spread %v not in [0, 5]", c.StaySpread)
	}
	return nil
}

// ArrivalRate returns the mean arrivals per hour at local hour h of a
// weekday (weekend days: 0.6×): a morning peak near 08:30, a broad
// midday one and an evening one over a floor from 06:00 to 23:00,
// integrating to perDay over the day.
func ArrivalRate(h, perDay float64) float64 {
	bump := func(mu, sd float64) float64 {
		z := (h - mu) / sd
		return math.Exp(-z*z/2) / (sd * math.Sqrt(2*math.Pi))
	}
	floor := 0.0
	if h >= 6 && h < 23 {
		floor = 1.0 / 17
	}
	shape := 0.35*bump(8.5, 1.2) + 0.3*bump(13.5, 2.5) + 0.25*bump(19, 1.5) + 0.1*floor
	return perDay * shape
}

// Synthesize draws sessions: Poisson arrivals at ArrivalRate per minute
// of local time, each on a uniform charger for a log-normal stay capped
// at 24 h, sorted by start.
func Synthesize(c SynthConfig) ([]Session, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x65762d73796e7468))
	names := make([]string, c.Chargers)
	for i := range names {
		names[i] = fmt.Sprintf("c-%03d", i+1)
	}
	var out []Session
	for m := 0; m < c.Days*24*60; m++ {
		at := c.Start.Add(time.Duration(m) * time.Minute)
		local := at.Add(c.UTCOffset)
		h := float64(local.Hour()) + float64(local.Minute())/60
		rate := ArrivalRate(h, c.PerDay) / 60
		if wd := local.Weekday(); wd == time.Saturday || wd == time.Sunday {
			rate *= 0.6
		}
		for k := poisson(rng, rate); k > 0; k-- {
			start := at.Add(time.Duration(rng.Float64() * float64(time.Minute))).Truncate(time.Second)
			stay := time.Duration(float64(c.MedianStay) * math.Exp(c.StaySpread*rng.NormFloat64()))
			stay = min(max(stay, time.Minute), 24*time.Hour).Truncate(time.Second)
			out = append(out, Session{Start: start, End: start.Add(stay), Charger: names[rng.IntN(c.Chargers)]})
		}
	}
	sortByStart(out)
	return out, nil
}

// poisson draws a Poisson count with a small mean by inversion.
func poisson(rng *rand.Rand, lam float64) int {
	l, k, p := math.Exp(-lam), 0, rng.Float64()
	for p > l {
		k++
		p *= rng.Float64()
	}
	return k
}
