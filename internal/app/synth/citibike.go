package synth

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// File names inside a Citi Bike data directory (see its PROVENANCE.md).
const (
	citiBikeCounts   = "counts_2018.csv"  // time,station,pickups,dropoffs
	citiBikeStations = "stations.csv"     // station,name,lat,lon,capacity
	citiBikeLayout   = "2006-01-02T15:04" // local clock time, no offset
)

// BikeQuery selects stations and an hourly window [Start, End] (both
// included) from the Citi Bike counts. Times are the file's naive local
// clock times, represented in UTC.
type BikeQuery struct {
	Stations   []int
	Start, End time.Time
	// Counts is the path of the counts file (time,station,pickups,
	// dropoffs); empty: counts_2018.csv in the directory.
	Counts string
}

// BikeStation is one row of stations.csv.
type BikeStation struct {
	ID       int
	Name     string
	Lat, Lon float64
	Capacity int
}

// BikeCounts holds hourly pickups and drop-offs of the queried stations.
type BikeCounts struct {
	// Stations are in query order.
	Stations []BikeStation
	// Start is the first hour; row i is Start + i hours.
	Start time.Time
	// Pickups and Dropoffs are hour × station counts.
	Pickups, Dropoffs [][]float64
}

// ReadCitiBike reads the queried stations and window from the Citi Bike
// directory dir (stations.csv, and counts_2018.csv unless q.Counts names
// another counts file). Every (hour, station) of the window must be
// present exactly once.
func ReadCitiBike(dir string, q BikeQuery) (*BikeCounts, error) {
	if len(q.Stations) == 0 {
		return nil, errors.New("synth: citibike query names no stations")
	}
	if q.End.Before(q.Start) {
		return nil, fmt.Errorf("synth: citibike window ends (%v) before it starts (%v)", q.End, q.Start)
	}
	span := q.End.Sub(q.Start)
	if span%time.Hour != 0 || q.Start.Truncate(time.Hour) != q.Start {
		return nil, fmt.Errorf("synth: citibike window %v … %v is not on whole hours", q.Start, q.End)
	}
	col := make(map[int]int, len(q.Stations))
	for k, id := range q.Stations {
		if _, dup := col[id]; dup {
			return nil, fmt.Errorf("synth: citibike station %d queried twice", id)
		}
		col[id] = k
	}
	stations, err := readBikeStations(filepath.Join(dir, citiBikeStations), q.Stations)
	if err != nil {
		return nil, err
	}
	n := int(span/time.Hour) + 1
	c := &BikeCounts{Stations: stations, Start: q.Start, Pickups: filled(n, len(col), math.NaN()), Dropoffs: filled(n, len(col), math.NaN())}
	counts := q.Counts
	if counts == "" {
		counts = filepath.Join(dir, citiBikeCounts)
	}
	if err := readBikeCounts(counts, q.Start, col, c); err != nil {
		return nil, err
	}
	for i := range n {
		for k, v := range c.Pickups[i] {
			if math.IsNaN(v) {
				return nil, fmt.Errorf("synth: citibike counts %s lack station %d at %s", counts, q.Stations[k], q.Start.Add(time.Duration(i)*time.Hour).Format(citiBikeLayout))
			}
		}
	}
	return c, nil
}

// openCSV opens path and checks its header.
func openCSV(path string, header []string) (*os.File, *csv.Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("synth: citibike: %w", err)
	}
	r := csv.NewReader(f)
	r.FieldsPerRecord = len(header)
	r.ReuseRecord = true
	got, err := r.Read()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("synth: citibike %s: reading header: %w", path, err)
	}
	if !slices.Equal(got, header) {
		f.Close()
		return nil, nil, fmt.Errorf("synth: citibike %s: header %q, want %q", path, strings.Join(got, ","), strings.Join(header, ","))
	}
	return f, r, nil
}

func readBikeStations(path string, ids []int) ([]BikeStation, error) {
	f, r, err := openCSV(path, []string{"station", "name", "lat", "lon", "capacity"})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all := map[int]BikeStation{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("synth: citibike %s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		var s BikeStation
		var e1, e2, e3, e4 error
		s.ID, e1 = strconv.Atoi(rec[0])
		s.Name = rec[1]
		s.Lat, e2 = strconv.ParseFloat(rec[2], 64)
		s.Lon, e3 = strconv.ParseFloat(rec[3], 64)
		s.Capacity, e4 = strconv.Atoi(rec[4])
		if err := errors.Join(e1, e2, e3, e4); err != nil {
			return nil, fmt.Errorf("synth: citibike %s line %d: %w", path, line, err)
		}
		all[s.ID] = s
	}
	out := make([]BikeStation, len(ids))
	for k, id := range ids {
		s, ok := all[id]
		if !ok {
			known := make([]int, 0, len(all))
			for id := range all {
				known = append(known, id)
			}
			slices.Sort(known)
			return nil, fmt.Errorf("synth: citibike station %d not in %s (have %v)", id, path, known)
		}
		out[k] = s
	}
	return out, nil
}

func readBikeCounts(path string, start time.Time, col map[int]int, c *BikeCounts) error {
	f, r, err := openCSV(path, []string{"time", "station", "pickups", "dropoffs"})
	if err != nil {
		return err
	}
	defer f.Close()
	n := len(c.Pickups)
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("synth: citibike %s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		id, err := strconv.Atoi(rec[1])
		if err != nil {
			return fmt.Errorf("synth: citibike %s line %d: station: %w", path, line, err)
		}
		k, want := col[id]
		if !want {
			continue
		}
		t, err := time.Parse(citiBikeLayout, rec[0])
		if err != nil {
			return fmt.Errorf("synth: citibike %s line %d: %w", path, line, err)
		}
		d := t.Sub(start)
		if d < 0 || d%time.Hour != 0 || int(d/time.Hour) >= n {
			continue
		}
		i := int(d / time.Hour)
		p, err1 := parseCount(rec[2])
		q, err2 := parseCount(rec[3])
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("synth: citibike %s line %d: %w", path, line, err)
		}
		if !math.IsNaN(c.Pickups[i][k]) {
			return fmt.Errorf("synth: citibike %s line %d: duplicate row for station %d at %s", path, line, id, rec[0])
		}
		c.Pickups[i][k], c.Dropoffs[i][k] = p, q
	}
}

// parseCount parses a non-negative finite count.
func parseCount(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if !(v >= 0) || math.IsInf(v, 1) {
		return 0, fmt.Errorf("count %q is not a non-negative number", s)
	}
	return v, nil
}
