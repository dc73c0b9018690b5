package charging

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// ErrSessions wraps every problem with a sessions file.
var ErrSessions = errors.New("sessions")

// maxSessionsBytes bounds a sessions file.
const maxSessionsBytes = 1 << 30

// Session is one charging session: a car connected to Charger from Start
// until End.
type Session struct {
	Start, End time.Time
	Charger    string
}

// ReadSessions parses a sessions CSV with a header naming the columns
// start, end (RFC 3339 times) and charger (or station, as ACN-Data
// exports name it); other columns are ignored. The sessions come back
// sorted by start. Errors name the line.
func ReadSessions(r io.Reader, name string) ([]Session, error) {
	cr := csv.NewReader(io.LimitReader(r, maxSessionsBytes))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: %s:1: reading header: %w", ErrSessions, name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	if _, ok := col["charger"]; !ok {
		if i, ok := col["station"]; ok {
			col["charger"] = i
		}
	}
	for _, c := range []string{"start", "end", "charger"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%w: %s:1: no %q column (header %v)", ErrSessions, name, c, header)
		}
	}
	var out []Session
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrSessions, name, line, err)
		}
		s, err := parseSession(rec, col)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrSessions, name, line, err)
		}
		out = append(out, s)
	}
	sortByStart(out)
	return out, nil
}

func parseSession(rec []string, col map[string]int) (Session, error) {
	start, err := time.Parse(time.RFC3339, strings.TrimSpace(rec[col["start"]]))
	if err != nil {
		return Session{}, fmt.Errorf("start: %w", err)
	}
	end, err := time.Parse(time.RFC3339, strings.TrimSpace(rec[col["end"]]))
	if err != nil {
		return Session{}, fmt.Errorf("end: %w", err)
	}
	if !end.After(start) {
		return Session{}, fmt.Errorf("end %s is not after start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	ch := strings.TrimSpace(rec[col["charger"]])
	if ch == "" {
		return Session{}, errors.New("empty charger")
	}
	return Session{Start: start.UTC(), End: end.UTC(), Charger: ch}, nil
}

// WriteSessions writes sessions as a CSV ReadSessions reads.
func WriteSessions(w io.Writer, ss []Session) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"start", "end", "charger"}); err != nil {
		return fmt.Errorf("writing sessions: %w", err)
	}
	for _, s := range ss {
		if err := cw.Write([]string{s.Start.Format(time.RFC3339), s.End.Format(time.RFC3339), s.Charger}); err != nil {
			return fmt.Errorf("writing sessions: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing sessions: %w", err)
	}
	return nil
}

// Chargers returns the distinct chargers of ss, sorted.
func Chargers(ss []Session) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s.Charger] {
			seen[s.Charger] = true
			out = append(out, s.Charger)
		}
	}
	sort.Strings(out)
	return out
}

// sortByStart sorts sessions by start, keeping the order of equal starts.
func sortByStart(ss []Session) {
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Start.Before(ss[j].Start) })
}
