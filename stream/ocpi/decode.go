package ocpi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// StatusSuccess is OCPI's status_code for a successful response.
const StatusSuccess = 1000

// Errors that refuse a whole page, wrapped with detail.
var (
	ErrMalformed = errors.New("ocpi: malformed response")
	ErrStatus    = errors.New("ocpi: error status_code")
	ErrStale     = errors.New("ocpi: stale response")
)

// Reasons an EVSE's status is refused (Problem.Reason).
const (
	ReasonNoUID         = "no_uid"
	ReasonUnknownStatus = "unknown_status"
	ReasonNoTime        = "no_last_updated"
	ReasonFuture        = "future_last_updated"
	ReasonStale         = "stale"
	ReasonNoLocation    = "no_location_id"
)

// Problem is one EVSE (or location) refused from a page.
type Problem struct {
	Location, EVSE, Reason, Detail string
}

func (p Problem) String() string {
	return fmt.Sprintf("location %q EVSE %q: %s (%s)", p.Location, p.EVSE, p.Reason, p.Detail)
}

// Page is one decoded page: the statuses accepted and the problems.
type Page struct {
	// Timestamp is the response's own time (zero if absent).
	Timestamp time.Time
	// Locations is the number of locations on the page (refused ones
	// included), for the pagination check.
	Locations int
	Statuses  []StatusEvent
	Problems  []Problem
}

type envelope struct {
	Data          json.RawMessage `json:"data"`
	StatusCode    *int            `json:"status_code"`
	StatusMessage string          `json:"status_message"`
	Timestamp     *time.Time      `json:"timestamp"`
}

type location struct {
	ID    string `json:"id"`
	EVSEs []evse `json:"evses"`
}

type evse struct {
	UID         string     `json:"uid"`
	Status      string     `json:"status"`
	LastUpdated *time.Time `json:"last_updated"`
}

// maxPageBytes bounds one page's body.
const maxPageBytes = 16 << 20

// Decode parses one page of a locations response. now is the time the
// page was received: a response whose timestamp is more than maxAge
// before it (maxAge > 0: a cached copy that stopped updating) is refused
// whole with ErrStale, and an EVSE whose last_updated is more than a
// minute after it (a clock error) is refused alone. An EVSE's
// last_updated may be old: it is when its status last changed. Each
// accepted EVSE becomes a StatusEvent with Site the location id, EVSE the
// uid and At its last_updated.
func Decode(body []byte, now time.Time, maxAge time.Duration) (*Page, error) {
	if len(body) > maxPageBytes {
		return nil, fmt.Errorf("%w: body of %d bytes is over %d", ErrMalformed, len(body), maxPageBytes)
	}
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the response object", ErrMalformed)
	}
	if env.StatusCode == nil {
		return nil, fmt.Errorf("%w: no status_code", ErrMalformed)
	}
	if *env.StatusCode != StatusSuccess {
		return nil, fmt.Errorf("%w: %d %q", ErrStatus, *env.StatusCode, env.StatusMessage)
	}
	var locs []location
	if len(env.Data) == 0 || bytes.Equal(env.Data, []byte("null")) {
		return nil, fmt.Errorf("%w: no data array", ErrMalformed)
	}
	if err := json.Unmarshal(env.Data, &locs); err != nil {
		return nil, fmt.Errorf("%w: data: %w", ErrMalformed, err)
	}
	p := &Page{Locations: len(locs)}
	if env.Timestamp != nil {
		p.Timestamp = env.Timestamp.UTC()
		if age := now.Sub(p.Timestamp); maxAge > 0 && age > maxAge {
			return nil, fmt.Errorf("%w: timestamp %s is %s before the poll (max_age %s)", ErrStale, p.Timestamp.Format(time.RFC3339), age.Round(time.Second), maxAge)
		}
	}
	for _, l := range locs {
		if l.ID == "" {
			p.Problems = append(p.Problems, Problem{Reason: ReasonNoLocation, Detail: fmt.Sprintf("%d EVSEs", len(l.EVSEs))})
			continue
		}
		for _, e := range l.EVSEs {
			if prob, ok := check(l.ID, e, now); !ok {
				p.Problems = append(p.Problems, prob)
				continue
			}
			p.Statuses = append(p.Statuses, StatusEvent{Site: l.ID, EVSE: e.UID, Status: Status(e.Status), At: e.LastUpdated.UTC()})
		}
	}
	return p, nil
}

// check reports whether an EVSE's fields are usable, else its problem.
func check(loc string, e evse, now time.Time) (Problem, bool) {
	bad := func(reason, detail string) (Problem, bool) {
		return Problem{Location: loc, EVSE: e.UID, Reason: reason, Detail: detail}, false
	}
	switch {
	case e.UID == "":
		return bad(ReasonNoUID, "status "+e.Status)
	case !Status(e.Status).Valid():
		return bad(ReasonUnknownStatus, fmt.Sprintf("status %q", e.Status))
	case e.LastUpdated == nil:
		return bad(ReasonNoTime, "no last_updated")
	case e.LastUpdated.Sub(now) > time.Minute:
		return bad(ReasonFuture, fmt.Sprintf("last_updated %s is after the poll at %s", e.LastUpdated.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	return Problem{}, true
}
