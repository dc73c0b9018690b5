package ocpi

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// EventsHeader is the header of an EVSE status timeline CSV.
const EventsHeader = "time,site,evse,status"

// maxEventRows bounds a timeline CSV (about 50 bytes a row).
const maxEventRows = 1 << 22

// ReadEvents reads an EVSE status timeline CSV (EventsHeader: an RFC
// 3339 time within 2000–2200, the site's location id, the EVSE uid and
// its OCPI status from that time on), sorted stably by time. The first
// bad row is an error naming the file (name) and line; an empty file or
// one with another header is an error too.
func ReadEvents(r io.Reader, name string) ([]StatusEvent, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 4
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty, want the header %q", name, EventsHeader)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if got := strings.Join(head, ","); strings.TrimPrefix(got, "\ufeff") != EventsHeader {
		return nil, fmt.Errorf("%s line 1: header %q, want %q", name, got, EventsHeader)
	}
	var out []StatusEvent
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(out) == maxEventRows {
			return nil, fmt.Errorf("%s line %d: more than %d rows", name, line, maxEventRows)
		}
		e, err := parseEvent(rec)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}

var (
	eventsFrom = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	eventsTo   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

func parseEvent(rec []string) (StatusEvent, error) {
	at, err := time.Parse(time.RFC3339, strings.TrimSpace(rec[0]))
	if err != nil {
		return StatusEvent{}, fmt.Errorf("time %q: want RFC 3339", rec[0])
	}
	if at.Before(eventsFrom) || !at.Before(eventsTo) {
		return StatusEvent{}, fmt.Errorf("time %s outside 2000–2200", rec[0])
	}
	e := StatusEvent{Site: strings.TrimSpace(rec[1]), EVSE: strings.TrimSpace(rec[2]), Status: Status(strings.TrimSpace(rec[3])), At: at.UTC()}
	switch {
	case e.Site == "":
		return e, errors.New("no site")
	case e.EVSE == "":
		return e, errors.New("no evse")
	case !e.Status.Valid():
		return e, fmt.Errorf("status %q is not an OCPI 2.2.1 EVSE status", rec[3])
	}
	return e, nil
}

// WriteEvents writes events as a timeline CSV that ReadEvents reads.
func WriteEvents(w io.Writer, events []StatusEvent) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(strings.Split(EventsHeader, ","))
	for _, e := range events {
		_ = cw.Write([]string{e.At.UTC().Format(time.RFC3339Nano), e.Site, e.EVSE, string(e.Status)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing EVSE status events: %w", err)
	}
	return nil
}
