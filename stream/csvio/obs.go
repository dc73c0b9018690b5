package csvio

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Row is one OBS row.
type Row struct {
	Line     int
	TimeText string
	Time     float64
	Product  string
	Demand   float64 // NaN: not observed
	Supply   float64 // +Inf: unlimited
	Censored bool
}

// TimeKind says how a file's times were written.
type TimeKind int

const (
	// Numeric times are plain numbers in the data's own unit.
	Numeric TimeKind = iota
	// Timestamp times were RFC 3339 or ISO 8601 local, now hours since the
	// Unix epoch.
	Timestamp
)

// Obs is a parsed OBS file.
type Obs struct {
	Name string
	Rows []Row
	Kind TimeKind
}

// ReadObs parses an OBS CSV; name labels errors (usually the path).
// An input over MaxObsBytes is refused.
func ReadObs(r io.Reader, name string) (*Obs, error) {
	cr, header, err := openCSV(r, maxObsBytes, "MaxObsBytes", name)
	if err != nil {
		return nil, err
	}
	cr.ReuseRecord = true
	col, err := obsColumns(header, name)
	if err != nil {
		return nil, err
	}
	o := &Obs{Name: name}
	kindSet := false
	seen := map[string]map[float64]int{}
	for line := 2; ; line++ {
		rec, done, err := nextRecord(cr, len(header), name, line)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		row, kind, err := obsRow(rec, col, line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if !kindSet {
			o.Kind, kindSet = kind, true
		} else if kind != o.Kind {
			return nil, fmt.Errorf("%s:%d: time %q mixes numbers and timestamps", name, line, row.TimeText)
		}
		if n := len(o.Rows); n > 0 && row.Time < o.Rows[n-1].Time {
			return nil, fmt.Errorf("%s:%d: time %s before the previous row's %s: rows must be sorted by time", name, line, row.TimeText, o.Rows[n-1].TimeText)
		}
		if seen[row.Product] == nil {
			seen[row.Product] = map[float64]int{}
		}
		if prev, dup := seen[row.Product][row.Time]; dup {
			return nil, fmt.Errorf("%s:%d: duplicate row for product %q at %s (first on line %d)", name, line, row.Product, row.TimeText, prev)
		}
		seen[row.Product][row.Time] = line
		o.Rows = append(o.Rows, row)
	}
	if len(o.Rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return o, nil
}

// obsColumns maps an OBS header's column names (case-insensitive, a
// byte-order mark dropped) to their positions; censored is optional.
func obsColumns(header []string, name string) (map[string]int, error) {
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("%s:1: duplicate column %q", name, h)
		}
		col[h] = i
	}
	for _, need := range []string{"time", "product", "demand", "supply"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s:1: missing column %q (want time,product,demand,supply[,censored])", name, need)
		}
	}
	return col, nil
}

// obsRow parses and checks one record on its own (order and duplicates
// are ReadObs's checks).
func obsRow(rec []string, col map[string]int, line int) (Row, TimeKind, error) {
	row := Row{Line: line, TimeText: strings.TrimSpace(rec[col["time"]]), Product: strings.TrimSpace(rec[col["product"]])}
	t, kind, err := ParseTime(row.TimeText)
	if err != nil {
		return row, kind, err
	}
	row.Time = t
	if err := checkProduct(row.Product); err != nil {
		return row, kind, err
	}
	if row.Demand, err = parseNumber(rec[col["demand"]], math.NaN()); err != nil {
		return row, kind, fmt.Errorf("demand: %w", err)
	}
	if row.Supply, err = parseNumber(rec[col["supply"]], math.Inf(1)); err != nil {
		return row, kind, fmt.Errorf("supply: %w", err)
	}
	if row.Supply < 0 {
		return row, kind, fmt.Errorf("negative supply %v", row.Supply)
	}
	if ci, ok := col["censored"]; ok {
		if row.Censored, err = parseBool(rec[ci]); err != nil {
			return row, kind, fmt.Errorf("censored: %w", err)
		}
	} else {
		row.Censored = !math.IsNaN(row.Demand) && row.Demand >= row.Supply
	}
	if row.Censored && math.IsInf(row.Supply, 1) {
		return row, kind, errors.New("censored with unlimited supply")
	}
	if row.Censored && math.IsNaN(row.Demand) {
		return row, kind, errors.New("censored without a demand value")
	}
	return row, kind, nil
}

// checkProduct refuses an empty product name or one with a control
// character (a line break inside quotes, a NUL): such a name is a broken
// file, would not survive a CSV round trip (the reader turns "\r\n" into
// "\n") and would break the lines of logs that name it.
func checkProduct(s string) error {
	if s == "" {
		return errors.New("empty product")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("product %q contains a control character", s)
		}
	}
	return nil
}

// parseNumber parses a finite float; empty means def.
func parseNumber(s string, def float64) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not finite", s)
	}
	return v, nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "t", "y":
		return true, nil
	case "0", "false", "no", "f", "n", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (want 0/1 or true/false)", s)
}

// ParseTime parses a number, an RFC 3339 timestamp or an ISO 8601 local
// YYYY-MM-DDTHH:MM[:SS] (UTC). Timestamps are returned in hours since the
// Unix epoch.
func ParseTime(s string) (float64, TimeKind, error) {
	if s == "" {
		return 0, 0, errors.New("empty time")
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, 0, fmt.Errorf("time %q is not finite", s)
		}
		return v, Numeric, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return float64(t.UnixNano()) / float64(time.Hour), Timestamp, nil
		}
	}
	return 0, 0, fmt.Errorf("time %q is not a number, RFC 3339 or YYYY-MM-DDTHH:MM[:SS]", s)
}

// nextRecord reads the next CSV record and checks it has width fields;
// done reports the end of the file. Errors name the file and line.
func nextRecord(cr *csv.Reader, width int, name string, line int) (rec []string, done bool, err error) {
	rec, err = cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s:%d: %w", name, line, err)
	}
	if len(rec) != width {
		return nil, false, fmt.Errorf("%s:%d: %d fields, header has %d", name, line, len(rec), width)
	}
	return rec, false, nil
}
