package synth

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dcgpd/dcgpd/internal/geo"
)

// PaperBikeStations is the default 4-hub cluster. The paper used Citi Bike
// stations 3711, 366, 496 and 3641, paired 3711↔366 and 496↔3641 by its
// transfer matrix; 366 and 496 are not in counts_2018.csv, so each is
// replaced by the nearest station of the file to its partner: 445
// (E 10 St & Avenue A, 259 m from 3711) and 402 (Broadway & E 22 St, 283 m
// from 3641). The two pairs are ~1.5 km apart. The paper's 2-hub variant is
// the first two.
var PaperBikeStations = []int{3711, 445, 402, 3641}

// PaperBikeQuery returns the paper's window, 2018-06-01 00:00 … 2018-08-01
// 00:00 (1465 hourly steps), for the first hubs (2 or 4) of
// PaperBikeStations.
func PaperBikeQuery(hubs int) (BikeQuery, error) {
	if hubs != 2 && hubs != 4 {
		return BikeQuery{}, fmt.Errorf("synth: the paper's bike experiments have 2 or 4 hubs, not %d", hubs)
	}
	return BikeQuery{
		Stations: slices.Clone(PaperBikeStations[:hubs]),
		Start:    time.Date(2018, 6, 1, 0, 0, 0, 0, time.UTC),
		End:      time.Date(2018, 8, 1, 0, 0, 0, 0, time.UTC),
	}, nil
}

// BikeConfig sets the censoring and transfer simulation on real counts.
type BikeConfig struct {
	// Seed drives the daily supply draws and the train/test permutation.
	Seed uint64
	// SupplyLow and SupplyHigh give each hub's daily initial-supply range:
	// U(SupplyLow[k], SupplyHigh[k]) at every midnight.
	SupplyLow, SupplyHigh []float64
	// Transfer, if set, is the N_p×N_p transfer matrix; otherwise it is
	// built from the hub locations with DiffLengthscaleM and Sink.
	Transfer [][]float64
	// DiffLengthscaleM is the diffusion lengthscale in metres.
	DiffLengthscaleM float64
	// Sink is the fraction of each excess that is lost when the transfer
	// matrix is built here; with an explicit Transfer it is only recorded.
	Sink float64
	// TestFrac is the share of hours held out (random permutation).
	TestFrac float64
}

// PaperBikeConfig returns the paper's supply ranges U(40,80), U(60,100),
// U(0,40), U(20,60) for the first hubs (2 or 4), no sink, a 70/30 split
// and a 100 m diffusion lengthscale, under which each hub of
// PaperBikeStations sends its excess to its pair partner (the paper's
// T: 0↔1, 2↔3 with probability ≈ 1; 2 hubs: [[0,1],[1,0]]).
func PaperBikeConfig(hubs int, seed uint64) (BikeConfig, error) {
	if hubs != 2 && hubs != 4 {
		return BikeConfig{}, fmt.Errorf("synth: the paper's bike experiments have 2 or 4 hubs, not %d", hubs)
	}
	return BikeConfig{
		Seed:             seed,
		SupplyLow:        []float64{40, 60, 0, 20}[:hubs],
		SupplyHigh:       []float64{80, 100, 40, 60}[:hubs],
		DiffLengthscaleM: 100,
		TestFrac:         0.3,
	}, nil
}

// Bike simulates censoring and transfer on real counts (the paper's bike
// appendix): true demand = pickups; supply from the daily-redrawn stock and the
// previous hour's drop-off/pickup balance (truncated to an integer);
// censored where pickups > supply; y_obs = min(y_c + eᵀT, supply). Times
// are hours since the window start (the reference fed t/(N−1) to its
// models); Features are metres east/north of the hubs' centroid; TrueF is
// NaN (unknown).
func Bike(c *BikeCounts, cfg BikeConfig) (*Dataset, error) {
	if c == nil || len(c.Pickups) == 0 || len(c.Stations) == 0 {
		return nil, fmt.Errorf("synth: bike simulation needs non-empty counts")
	}
	np, n := len(c.Stations), len(c.Pickups)
	if err := checkMatrix("pickups", c.Pickups, n, np); err != nil {
		return nil, fmt.Errorf("synth: bike counts: %w", err)
	}
	if err := checkMatrix("dropoffs", c.Dropoffs, n, np); err != nil {
		return nil, fmt.Errorf("synth: bike counts: %w", err)
	}
	if err := checkRanges(cfg.SupplyLow, cfg.SupplyHigh, np); err != nil {
		return nil, err
	}
	if !(cfg.TestFrac >= 0 && cfg.TestFrac < 1) {
		return nil, fmt.Errorf("synth: bike test fraction must be in [0, 1), got %v", cfg.TestFrac)
	}
	lat := make([]float64, np)
	lon := make([]float64, np)
	products := make([]string, np)
	for k, s := range c.Stations {
		lat[k], lon[k] = s.Lat, s.Lon
		products[k] = fmt.Sprintf("%d %s", s.ID, s.Name)
	}
	features := projectMetres(lat, lon)
	t := cfg.Transfer
	if t == nil {
		var err error
		if t, err = transitionMatrix(features, cfg.DiffLengthscaleM, cfg.Sink); err != nil {
			return nil, fmt.Errorf("synth: bike transfer: %w", err)
		}
	} else if err := checkMatrix("transfer", t, np, np); err != nil {
		return nil, fmt.Errorf("synth: bike: %w", err)
	}

	times := make([]float64, n)
	for i := range times {
		times[i] = float64(i)
	}
	grid := newSplit(times, np)
	for i := range n {
		copy(grid.TrueY[i], c.Pickups[i])
	}
	simulateHubSupply(&grid, c.Pickups, c.Dropoffs, c.Start.Hour(), cfg.SupplyLow, cfg.SupplyHigh, newRNG(cfg.Seed, streamSupply))
	censorGrid(&grid, t)
	train, test := randomSplit(newRNG(cfg.Seed, streamSplit), n, cfg.TestFrac)
	return &Dataset{
		Name:           fmt.Sprintf("bike-%d", np),
		Products:       products,
		Features:       features,
		Transfer:       t,
		Sink:           cfg.Sink,
		DiffusionSteps: 1,
		Train:          grid.subset(train),
		Test:           grid.subset(test),
	}, nil
}

func checkRanges(lo, hi []float64, np int) error {
	if len(lo) != np || len(hi) != np {
		return fmt.Errorf("synth: %d hubs but %d/%d supply bounds", np, len(lo), len(hi))
	}
	for k := range lo {
		if !(lo[k] >= 0 && hi[k] >= lo[k]) || math.IsInf(hi[k], 1) {
			return fmt.Errorf("synth: hub %d supply range [%v, %v] invalid", k, lo[k], hi[k])
		}
	}
	return nil
}

// projectMetres maps lat/lon to metres east/north of their centroid
// (equirectangular; exact enough over a few kilometres).
func projectMetres(lat, lon []float64) [][]float64 {
	var lat0, lon0 float64
	for k := range lat {
		lat0 += lat[k] / float64(len(lat))
		lon0 += lon[k] / float64(len(lon))
	}
	rad := math.Pi / 180
	out := make([][]float64, len(lat))
	for k := range lat {
		out[k] = []float64{
			(lon[k] - lon0) * rad * geo.EarthRadius * math.Cos(lat0*rad),
			(lat[k] - lat0) * rad * geo.EarthRadius,
		}
	}
	return out
}
