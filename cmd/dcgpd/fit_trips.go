package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/csvio"
)

// tripInputs are fit's flags for an operator's own history: a
// trip-count CSV (time,station,pickups,dropoffs) instead of --obs.
type tripInputs struct {
	trips, flow, stations string
	zeros                 bool
}

// readTripInputs reads what fit starts from when given --trips: the
// model configuration, the counts of the flow as uncensored observations
// (csvio.ReadTrips: a count says nothing of the stock, so the fit reads
// it as the demand), and the products: the stations of --stations that
// the counts name (every one must be there), else --products, else the
// stations of the counts without features.
func readTripInputs(cfgPath, prodPath string, in tripInputs) (spec.Spec, *csvio.Obs, *csvio.Products, error) {
	var sp spec.Spec
	if cfgPath != "" {
		var err error
		if sp, err = spec.Load(cfgPath); err != nil {
			return sp, nil, nil, err
		}
	}
	f, err := os.Open(in.trips)
	if err != nil {
		return sp, nil, nil, err
	}
	defer f.Close()
	obs, err := csvio.ReadTrips(f, in.trips, in.flow, in.zeros)
	if err != nil {
		return sp, nil, nil, err
	}
	if in.stations == "" {
		prods, err := readProducts(prodPath, obs)
		return sp, obs, prods, err
	}
	sf, err := os.Open(in.stations)
	if err != nil {
		return sp, nil, nil, err
	}
	defer sf.Close()
	all, err := csvio.ReadStations(sf, in.stations)
	if err != nil {
		return sp, nil, nil, err
	}
	prods, missing := all.Only(csvio.FromObs(obs).Names)
	if len(missing) > 0 {
		return sp, nil, nil, fmt.Errorf("%s: %d stations of %s are not listed (first: %s)", in.stations, len(missing), in.trips, strings.Join(missing[:min(len(missing), 5)], ", "))
	}
	return sp, obs, prods, nil
}

// readFitInputs reads fit's inputs from --obs (readInputs) or --trips.
func readFitInputs(cfgPath, obsPath, prodPath string, trips tripInputs) (spec.Spec, *csvio.Obs, *csvio.Products, error) {
	if trips.trips != "" {
		return readTripInputs(cfgPath, prodPath, trips)
	}
	return readInputs(cfgPath, obsPath, prodPath)
}

// orStations is the products file a model was fitted with: --products or
// --stations.
func orStations(products, stations string) string {
	if stations != "" {
		return stations
	}
	return products
}
