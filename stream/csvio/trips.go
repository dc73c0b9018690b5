package csvio

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Flows of a trip-count file (ReadTrips).
const (
	FlowPickups  = "pickups"
	FlowDropoffs = "dropoffs"
)

// ReadTrips parses a trip-count CSV, time,station,pickups,dropoffs (the
// per-bin counts a trip export aggregates to; other columns are ignored),
// into OBS rows for the flow (FlowPickups or FlowDropoffs): product the
// station, demand the count. A count says nothing of the bikes or docks
// the station had, so the supply is unlimited and no row is censored: the
// fit reads the counts as the demand itself. With zeros, a station of the
// file without a row at a time of the file had no trip then (count 0);
// otherwise that cell is not observed. Rows may come in any order; they
// are sorted by time (stable). name labels errors; an input over
// MaxObsBytes is refused.
func ReadTrips(r io.Reader, name, flow string, zeros bool) (*Obs, error) {
	if flow != FlowPickups && flow != FlowDropoffs {
		return nil, fmt.Errorf("flow %q: want %s or %s", flow, FlowPickups, FlowDropoffs)
	}
	cr, header, err := openCSV(r, maxObsBytes, "MaxObsBytes", name)
	if err != nil {
		return nil, err
	}
	col, err := headerColumns(header, name, []string{"time", "station", flow})
	if err != nil {
		return nil, err
	}
	o := &Obs{Name: name}
	for line := 2; ; line++ {
		rec, done, err := nextRecord(cr, len(header), name, line)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		row, kind, err := tripRow(rec, col, flow, line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if len(o.Rows) == 0 {
			o.Kind = kind
		} else if kind != o.Kind {
			return nil, fmt.Errorf("%s:%d: time %q mixes numbers and timestamps", name, line, row.TimeText)
		}
		o.Rows = append(o.Rows, row)
	}
	if len(o.Rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	sort.SliceStable(o.Rows, func(i, j int) bool { return o.Rows[i].Time < o.Rows[j].Time })
	if err := checkDuplicates(o); err != nil {
		return nil, err
	}
	if zeros {
		fillZeros(o)
	}
	return o, nil
}

// headerColumns maps a header's column names (case-insensitive, a
// byte-order mark dropped) to their positions and checks that need are
// there.
func headerColumns(header []string, name string, need []string) (map[string]int, error) {
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("%s:1: duplicate column %q", name, h)
		}
		col[h] = i
	}
	for _, n := range need {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("%s:1: missing column %q (want %s)", name, n, strings.Join(need, ","))
		}
	}
	return col, nil
}

// tripRow parses one record of a trip-count file.
func tripRow(rec []string, col map[string]int, flow string, line int) (Row, TimeKind, error) {
	row := Row{Line: line, TimeText: strings.TrimSpace(rec[col["time"]]), Product: strings.TrimSpace(rec[col["station"]]), Supply: math.Inf(1)}
	t, kind, err := ParseTime(row.TimeText)
	if err != nil {
		return row, kind, err
	}
	row.Time = t
	if err := checkProduct(row.Product); err != nil {
		return row, kind, err
	}
	text := rec[col[flow]]
	if row.Demand, err = parseNumber(text, math.NaN()); err != nil {
		return row, kind, fmt.Errorf("%s: %w", flow, err)
	}
	if row.Demand < 0 || row.Demand != math.Trunc(row.Demand) {
		return row, kind, fmt.Errorf("%s: %q is not a count", flow, strings.TrimSpace(text))
	}
	return row, kind, nil
}

// checkDuplicates refuses two rows of one station at one time (rows
// sorted by time).
func checkDuplicates(o *Obs) error {
	first := map[string]int{}
	for i, r := range o.Rows {
		if i > 0 && r.Time != o.Rows[i-1].Time {
			clear(first)
		}
		if prev, dup := first[r.Product]; dup {
			return fmt.Errorf("%s:%d: duplicate row for station %q at %s (first on line %d)", o.Name, r.Line, r.Product, r.TimeText, prev)
		}
		first[r.Product] = r.Line
	}
	return nil
}

// fillZeros adds a row with count 0 for every station of o at every time
// of o where it has none (Line 0: no line of the file).
func fillZeros(o *Obs) {
	var stations []string
	seen := map[string]bool{}
	for _, r := range o.Rows {
		if !seen[r.Product] {
			seen[r.Product] = true
			stations = append(stations, r.Product)
		}
	}
	out := make([]Row, 0, len(o.Rows))
	for i := 0; i < len(o.Rows); {
		j := i
		have := map[string]bool{}
		for ; j < len(o.Rows) && o.Rows[j].Time == o.Rows[i].Time; j++ {
			have[o.Rows[j].Product] = true
		}
		out = append(out, o.Rows[i:j]...)
		for _, s := range stations {
			if !have[s] {
				out = append(out, Row{TimeText: o.Rows[i].TimeText, Time: o.Rows[i].Time, Product: s, Supply: math.Inf(1)})
			}
		}
		i = j
	}
	o.Rows = out
}
