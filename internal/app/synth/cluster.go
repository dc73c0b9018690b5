package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// NoiseModel is how a simulated cluster's true demand scatters around its
// rate.
type NoiseModel int

const (
	// NoisePoisson draws integer demand ~ Poisson(rate), like real counts.
	NoisePoisson NoiseModel = iota
	// NoiseGaussian draws demand = rate + N(0, GaussianSD²), unclipped, so
	// that it matches the models' Gaussian likelihood exactly.
	NoiseGaussian
)

// SplitMode is how a simulated cluster's hours are divided.
type SplitMode int

const (
	// SplitRandom holds out a random TestFrac of the hours (the bike
	// protocol's interpolation split).
	SplitRandom SplitMode = iota
	// SplitTail holds out the last TestFrac of the hours (forecasting).
	SplitTail
)

// ClusterConfig parameterises Cluster. Start from DefaultClusterConfig.
type ClusterConfig struct {
	// Hubs is N_p (default 6).
	Hubs int
	// Days is the series length in days of 24 hourly steps (default 28);
	// step 0 is Monday 00:00.
	Days int
	// RadiusM: hubs are placed uniformly in a disc of this radius in metres
	// around the centre (default 800).
	RadiusM float64
	// MinSepM is the minimum distance between hubs in metres (default 150).
	MinSepM float64
	// SpacingM > 0 lays out a city: the disc grows to give each hub
	// SpacingM² square metres on average, radius max(RadiusM,
	// SpacingM·√(Hubs/π)) (0, the default: the fixed disc, which holds a few
	// dozen hubs 150 m apart).
	SpacingM float64
	// LevelLow, LevelHigh bound each hub's mean pickups per hour, drawn
	// uniformly (default 3, 12).
	LevelLow, LevelHigh float64
	// PeakSharpness is the von Mises concentration of the 08:30 and 18:00
	// commuter peaks (default 3); each hub draws its morning share
	// uniformly, and its drop-offs use the complementary share, so stock
	// drains at one peak and refills at the other.
	PeakSharpness float64
	// WeeklyAmp is the relative amplitude of the smooth weekly cycle,
	// highest mid-week (default 0.25).
	WeeklyAmp float64
	// SlowSD and SlowLengthscaleH are the standard deviation and
	// lengthscale (hours) of a Matérn-3/2 term on the log rate, independent
	// per hub and for pickups and drop-offs (default 0.25, 72).
	SlowSD, SlowLengthscaleH float64
	// Noise and GaussianSD select the observation noise (default Poisson;
	// GaussianSD 1 is used only by NoiseGaussian).
	Noise      NoiseModel
	GaussianSD float64
	// SupplyLowFrac, SupplyHighFrac: each midnight a hub's stock is redrawn
	// U(lo, hi) × its expected daily pickups (default 0.1, 0.5).
	SupplyLowFrac, SupplyHighFrac float64
	// DiffLengthscaleM is the diffusion lengthscale in metres (default 250).
	DiffLengthscaleM float64
	// Sink is the fraction of unmet demand that is lost (default 0.2).
	Sink float64
	// TestFrac and Split choose the held-out hours (default 0.3, random).
	TestFrac float64
	Split    SplitMode
}

// DefaultClusterConfig returns the documented defaults.
func DefaultClusterConfig() ClusterConfig {
	return ClusterConfig{
		Hubs: 6, Days: 28, RadiusM: 800, MinSepM: 150,
		LevelLow: 3, LevelHigh: 12, PeakSharpness: 3, WeeklyAmp: 0.25,
		SlowSD: 0.25, SlowLengthscaleH: 72,
		Noise: NoisePoisson, GaussianSD: 1,
		SupplyLowFrac: 0.1, SupplyHighFrac: 0.5,
		DiffLengthscaleM: 250, Sink: 0.2,
		TestFrac: 0.3, Split: SplitRandom,
	}
}

func (c ClusterConfig) validate() error {
	switch {
	case c.Hubs < 1:
		return fmt.Errorf("synth: cluster needs at least one hub, got %d", c.Hubs)
	case c.Days < 1:
		return fmt.Errorf("synth: cluster needs at least one day, got %d", c.Days)
	case !(c.RadiusM > 0) || !(c.MinSepM >= 0) || !(c.SpacingM >= 0) || math.IsInf(c.SpacingM, 1):
		return fmt.Errorf("synth: cluster radius %v / separation %v invalid", c.RadiusM, c.MinSepM)
	case !(c.LevelLow > 0 && c.LevelHigh >= c.LevelLow):
		return fmt.Errorf("synth: cluster level range [%v, %v] invalid", c.LevelLow, c.LevelHigh)
	case !(c.PeakSharpness >= 0) || !(c.WeeklyAmp >= 0 && c.WeeklyAmp < 1):
		return fmt.Errorf("synth: cluster peak sharpness %v / weekly amplitude %v invalid", c.PeakSharpness, c.WeeklyAmp)
	case !(c.SlowSD >= 0) || !(c.SlowLengthscaleH > 0):
		return fmt.Errorf("synth: cluster slow term sd %v / lengthscale %v invalid", c.SlowSD, c.SlowLengthscaleH)
	case c.Noise != NoisePoisson && c.Noise != NoiseGaussian:
		return fmt.Errorf("synth: cluster noise model %d unknown", c.Noise)
	case c.Noise == NoiseGaussian && !(c.GaussianSD >= 0):
		return fmt.Errorf("synth: cluster Gaussian sd %v invalid", c.GaussianSD)
	case !(c.SupplyLowFrac >= 0 && c.SupplyHighFrac >= c.SupplyLowFrac) || math.IsInf(c.SupplyHighFrac, 1):
		return fmt.Errorf("synth: cluster supply range [%v, %v] invalid", c.SupplyLowFrac, c.SupplyHighFrac)
	case !(c.TestFrac >= 0 && c.TestFrac < 1):
		return fmt.Errorf("synth: cluster test fraction %v not in [0, 1)", c.TestFrac)
	case c.Split != SplitRandom && c.Split != SplitTail:
		return fmt.Errorf("synth: cluster split mode %d unknown", c.Split)
	}
	return nil
}

// Cluster simulates a bike-share cluster without real data: hubs near a
// centre (Features in metres east/north), hourly true demand around a rate
// level × daily commuter profile × weekly cycle × exp(slow Matérn-3/2 term)
// (TrueF is that rate), drop-offs from the complementary profile, the bike
// protocol's supply (daily redraw, hourly balance, integer stock), censoring
// and one transfer step to nearby hubs with T built from the locations
// (DiffLengthscaleM, Sink), receivers capped at their supply. Times are
// hours since Monday 00:00.
func Cluster(seed uint64, cfg ClusterConfig) (*Dataset, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	np, n := cfg.Hubs, 24*cfg.Days
	features, err := placeHubs(newRNG(seed, streamLocations), np, cfg.Radius(), cfg.MinSepM)
	if err != nil {
		return nil, err
	}
	t, err := transitionMatrix(features, cfg.DiffLengthscaleM, cfg.Sink)
	if err != nil {
		return nil, fmt.Errorf("synth: cluster transfer: %w", err)
	}
	times := make([]float64, n)
	for i := range times {
		times[i] = float64(i)
	}
	grid := newSplit(times, np)
	drop := newMatrix(n, np)
	prof := newRNG(seed, streamProfile)
	demand, drops := newRNG(seed, streamDemand), newRNG(seed, streamDropoffs)
	lo, hi := make([]float64, np), make([]float64, np)
	products := make([]string, np)
	for k := range np {
		products[k] = fmt.Sprintf("hub %d", k)
		level := uniform(prof, cfg.LevelLow, cfg.LevelHigh)
		morning := prof.Float64()
		pickRate := hubRates(demand, cfg, level, morning, n)
		dropRate := hubRates(drops, cfg, level, 1-morning, n)
		for i := range n {
			grid.TrueF[i][k] = pickRate[i]
			grid.TrueY[i][k] = noisy(demand, cfg, pickRate[i])
			drop[i][k] = noisy(drops, cfg, dropRate[i])
		}
		lo[k] = cfg.SupplyLowFrac * 24 * level
		hi[k] = cfg.SupplyHighFrac * 24 * level
	}
	simulateHubSupply(&grid, grid.TrueY, drop, 0, lo, hi, newRNG(seed, streamSupply))
	censorGrid(&grid, t)
	var train, test []int
	if cfg.Split == SplitTail {
		train, test = tailSplit(n, cfg.TestFrac)
	} else {
		train, test = randomSplit(newRNG(seed, streamSplit), n, cfg.TestFrac)
	}
	return &Dataset{
		Name:           fmt.Sprintf("cluster-%d", np),
		Products:       products,
		Features:       features,
		Transfer:       t,
		Sink:           cfg.Sink,
		DiffusionSteps: 1,
		Train:          grid.subset(train),
		Test:           grid.subset(test),
	}, nil
}

// Radius returns the radius of the disc the hubs are placed in: RadiusM,
// grown with the number of hubs when SpacingM is set.
func (c ClusterConfig) Radius() float64 {
	if c.SpacingM > 0 {
		return math.Max(c.RadiusM, c.SpacingM*math.Sqrt(float64(c.Hubs)/math.Pi))
	}
	return c.RadiusM
}

// placeHubs draws np points uniformly in a disc, at least minSep apart.
func placeHubs(r *rand.Rand, np int, radius, minSep float64) ([][]float64, error) {
	const maxTries = 100000
	out := make([][]float64, 0, np)
	for try := 0; len(out) < np; try++ {
		if try == maxTries {
			return nil, fmt.Errorf("synth: cannot place %d hubs %v m apart in a %v m disc (a city needs a spacing: SpacingM, dcgpd simulate --city)", np, minSep, radius)
		}
		rho := radius * math.Sqrt(r.Float64())
		phi := 2 * math.Pi * r.Float64()
		p := []float64{rho * math.Cos(phi), rho * math.Sin(phi)}
		ok := true
		for _, q := range out {
			ok = ok && sqDist(p, q) >= minSep*minSep
		}
		if ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// hubRates returns one hub's hourly rate: level × daily profile (morning
// share of the commuter peaks, normalised to mean 1 over a day) × weekly
// cycle × exp(Matérn-3/2 term − SlowSD²/2), the last factor having mean 1.
func hubRates(r *rand.Rand, cfg ClusterConfig, level, morning float64, n int) []float64 {
	var daily [24]float64
	mean := 0.0
	for h := range daily {
		daily[h] = 0.15 + morning*vonMises(float64(h), 8.5, cfg.PeakSharpness) +
			(1-morning)*vonMises(float64(h), 18, cfg.PeakSharpness)
		mean += daily[h] / 24
	}
	slow := matern32Path(r, n, 1, cfg.SlowSD*cfg.SlowSD, cfg.SlowLengthscaleH)
	out := make([]float64, n)
	for i := range out {
		day := float64(i) / 24
		weekly := 1 + cfg.WeeklyAmp*math.Cos(2*math.Pi*(day-2.5)/7)
		out[i] = level * daily[i%24] / mean * weekly * math.Exp(slow[i]-cfg.SlowSD*cfg.SlowSD/2)
	}
	return out
}

// vonMises is a smooth 24-hour-periodic bump of height 1 at hour mu.
func vonMises(h, mu, kappa float64) float64 {
	return math.Exp(kappa * (math.Cos(2*math.Pi*(h-mu)/24) - 1))
}

func noisy(r *rand.Rand, cfg ClusterConfig, rate float64) float64 {
	if cfg.Noise == NoiseGaussian {
		return rate + cfg.GaussianSD*r.NormFloat64()
	}
	return poisson(r, rate)
}
