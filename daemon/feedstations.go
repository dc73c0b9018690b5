package daemon

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dcgpd/dcgpd/stream/gbfs"
)

// feedStations returns the absolute path of fs's stations file (a
// products CSV: product,lat,lon,capacity) and its number of stations.
// A file kept from an earlier start is used as it is, so that the
// models' products match their snapshots; otherwise the feed's
// station_information is read (retried, doubling from 1 s to 1 min,
// until ctx ends) and written there.
func (d *Daemon) feedStations(ctx context.Context, fs *feedSource) (string, int, error) {
	path, err := filepath.Abs(fs.rc.StationsPath())
	if err != nil {
		return "", 0, fmt.Errorf("rebalance %s.stations_file: %w", fs.rc.Name, err)
	}
	if n, err := countStations(path); err == nil {
		fs.log.Info().Str("stations_file", path).Int("stations", n).
			Msg("serving the stations kept from the first start (move the file and the snapshots away to take the feed's current list)")
		return path, n, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", 0, fmt.Errorf("rebalance %s.stations_file: %w", fs.rc.Name, err)
	}
	wait := time.Second
	for {
		si, err := fs.poller.Stations(ctx)
		if err == nil && len(si.Stations) == 0 {
			err = errors.New("station_information lists no usable station")
		}
		if err == nil {
			if err := writeStations(path, si.Stations); err != nil {
				return "", 0, fmt.Errorf("rebalance %s.stations_file: %w", fs.rc.Name, err)
			}
			fs.log.Info().Str("stations_file", path).Int("stations", len(si.Stations)).Int("unreadable", len(si.Problems)).
				Msg("the models serve the feed's stations (kept in stations_file for restarts)")
			return path, len(si.Stations), nil
		}
		fs.mu.Lock()
		fs.stationsErr = err.Error()
		fs.mu.Unlock()
		fs.log.Warn().Err(err).Dur("retry_in", wait).Msg("cannot read the feed's stations yet; the models start once it answers")
		select {
		case <-ctx.Done():
			return "", 0, fmt.Errorf("rebalance %s: stopped before the feed's stations were read: %w", fs.rc.Name, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

// writeStations writes the stations, sorted by id, as a products CSV.
func writeStations(path string, stations []gbfs.StationInfo) error {
	list := slices.Clone(stations)
	slices.SortFunc(list, func(a, b gbfs.StationInfo) int { return strings.Compare(a.ID, b.ID) })
	var rows [][]string
	rows = append(rows, []string{"product", "lat", "lon", "capacity"})
	for _, s := range list {
		capacity := ""
		if s.Capacity >= 0 {
			capacity = strconv.Itoa(s.Capacity)
		}
		rows = append(rows, []string{s.ID, strconv.FormatFloat(s.Lat, 'f', -1, 64), strconv.FormatFloat(s.Lon, 'f', -1, 64), capacity})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// countStations counts the rows of a stations file.
func countStations(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 2 {
		return 0, fmt.Errorf("%s: no station", path)
	}
	return len(rows) - 1, nil
}
