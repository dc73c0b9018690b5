package stationstatus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// SchemaVersion is the version of the station status messages written and
// read; a message with another version is refused.
const SchemaVersion = 1

// MaxMessageBytes bounds a message; a producer splits a larger snapshot
// into several messages with the same At.
const MaxMessageBytes = 1 << 20

// MaxNameBytes bounds a station's name (a producer shortens a longer
// one; the decoder refuses it).
const MaxNameBytes = 200

// MaxCount bounds every count in a sample (bikes, docks, capacity).
const MaxCount = 100000

// Message is one snapshot (or one part of a snapshot) of a feed's
// stations.
type Message struct {
	Schema int `json:"schema"`
	// Feed names the system (the subject's last token).
	Feed string `json:"feed"`
	// At is when the snapshot was true: the GBFS file's last_updated.
	At time.Time `json:"at"`
	// Stations holds one sample per station; a station appears at most
	// once in a message.
	Stations []Sample `json:"stations"`
}

// Sample is one station's state at a snapshot.
type Sample struct {
	Station string `json:"station"`
	// Name is the station's name for people (GBFS station_information),
	// at most MaxNameBytes; optional, absent when not known. It names the
	// station on the operator's page and in the risk records; nothing
	// else reads it.
	Name string `json:"name,omitempty"`
	// Capacity is the number of docking points (station_information);
	// nil when not published.
	Capacity *int `json:"capacity,omitempty"`
	// BikesAvailable are the functional bikes at the station (rentable
	// when Renting).
	BikesAvailable int `json:"bikes_available"`
	// DocksAvailable are the functional empty docks (usable when
	// Returning); nil for a station with unlimited docking.
	DocksAvailable *int `json:"docks_available,omitempty"`
	BikesDisabled  int  `json:"bikes_disabled,omitempty"`
	DocksDisabled  int  `json:"docks_disabled,omitempty"`
	Installed      bool `json:"is_installed"`
	Renting        bool `json:"is_renting"`
	Returning      bool `json:"is_returning"`
	// LastReported is when the station last reported to the operator.
	LastReported time.Time `json:"last_reported"`
}

// Error is why a message was refused: Reason is a short stable label
// (a metrics label value), Detail the explanation.
type Error struct {
	Reason, Detail string
}

func (e *Error) Error() string { return e.Reason + ": " + e.Detail }

func refuse(reason, format string, a ...any) *Error {
	return &Error{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// Refusal reasons.
const (
	ReasonMalformed = "malformed"
	ReasonSchema    = "schema"
	ReasonTooLarge  = "too_large"
	ReasonValue     = "bad_value"
	ReasonTime      = "bad_time"
	ReasonEmpty     = "empty"
)

// rawMessage and rawSample detect absent required fields.
type rawMessage struct {
	Schema   *int        `json:"schema"`
	Feed     string      `json:"feed"`
	At       *time.Time  `json:"at"`
	Stations []rawSample `json:"stations"`
}

type rawSample struct {
	Station        string     `json:"station"`
	Name           string     `json:"name"`
	Capacity       *int       `json:"capacity"`
	BikesAvailable *int       `json:"bikes_available"`
	DocksAvailable *int       `json:"docks_available"`
	BikesDisabled  int        `json:"bikes_disabled"`
	DocksDisabled  int        `json:"docks_disabled"`
	Installed      *bool      `json:"is_installed"`
	Renting        *bool      `json:"is_renting"`
	Returning      *bool      `json:"is_returning"`
	LastReported   *time.Time `json:"last_reported"`
}

// Decode parses and checks a message strictly: no unknown fields,
// nothing after the object, every required field present, counts within
// 0..MaxCount and, where the capacity is given, bikes and docks (available
// and disabled) within it, each station once, a station's last report
// not after the snapshot. On refusal the error is an *Error.
func Decode(data []byte) (*Message, error) {
	if len(data) > MaxMessageBytes {
		return nil, refuse(ReasonTooLarge, "message of %d bytes exceeds %d", len(data), MaxMessageBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r rawMessage
	if err := dec.Decode(&r); err != nil {
		return nil, refuse(ReasonMalformed, "%v", err)
	}
	if dec.More() {
		return nil, refuse(ReasonMalformed, "trailing data after the JSON object")
	}
	if r.Schema == nil || *r.Schema != SchemaVersion {
		got := "none"
		if r.Schema != nil {
			got = fmt.Sprint(*r.Schema)
		}
		return nil, refuse(ReasonSchema, "schema %s, want %d", got, SchemaVersion)
	}
	if r.Feed == "" {
		return nil, refuse(ReasonValue, "feed missing")
	}
	if r.At == nil || r.At.Year() < 1970 || r.At.Year() > 9999 {
		return nil, refuse(ReasonTime, "at missing or outside the years 1970-9999")
	}
	if len(r.Stations) == 0 {
		return nil, refuse(ReasonEmpty, "no stations")
	}
	m := &Message{Schema: SchemaVersion, Feed: r.Feed, At: r.At.UTC(), Stations: make([]Sample, len(r.Stations))}
	seen := make(map[string]bool, len(r.Stations))
	for i := range r.Stations {
		s, err := checkSample(&r.Stations[i], m.At)
		if err != nil {
			return nil, refuse(err.Reason, "station %d (%q): %s", i, r.Stations[i].Station, err.Detail)
		}
		if seen[s.Station] {
			return nil, refuse(ReasonValue, "station %q listed twice", s.Station)
		}
		seen[s.Station] = true
		m.Stations[i] = s
	}
	return m, nil
}

// ReportSlack is how far a station's last report may lie after the
// snapshot's time (clocks of publisher and stations differ a little).
const ReportSlack = time.Minute

func checkSample(r *rawSample, at time.Time) (Sample, *Error) {
	switch {
	case r.Station == "":
		return Sample{}, refuse(ReasonValue, "station missing")
	case r.BikesAvailable == nil:
		return Sample{}, refuse(ReasonValue, "bikes_available missing")
	case r.Installed == nil || r.Renting == nil || r.Returning == nil:
		return Sample{}, refuse(ReasonValue, "is_installed, is_renting and is_returning are required")
	case r.LastReported == nil:
		return Sample{}, refuse(ReasonTime, "last_reported missing")
	case len(r.Name) > MaxNameBytes:
		return Sample{}, refuse(ReasonValue, "name of %d bytes exceeds %d", len(r.Name), MaxNameBytes)
	}
	s := Sample{Station: r.Station, Name: r.Name, Capacity: r.Capacity, BikesAvailable: *r.BikesAvailable, DocksAvailable: r.DocksAvailable,
		BikesDisabled: r.BikesDisabled, DocksDisabled: r.DocksDisabled, Installed: *r.Installed, Renting: *r.Renting,
		Returning: *r.Returning, LastReported: r.LastReported.UTC()}
	for _, c := range []struct {
		name string
		v    *int
	}{{"capacity", s.Capacity}, {"bikes_available", &s.BikesAvailable}, {"docks_available", s.DocksAvailable},
		{"bikes_disabled", &s.BikesDisabled}, {"docks_disabled", &s.DocksDisabled}} {
		if c.v != nil && (*c.v < 0 || *c.v > MaxCount) {
			return Sample{}, refuse(ReasonValue, "%s %d outside 0..%d", c.name, *c.v, MaxCount)
		}
	}
	if s.Capacity != nil && s.Occupied() > *s.Capacity {
		return Sample{}, refuse(ReasonValue, "%d bikes and docks (available and disabled) exceed the capacity %d", s.Occupied(), *s.Capacity)
	}
	if s.LastReported.After(at.Add(ReportSlack)) {
		return Sample{}, refuse(ReasonTime, "last_reported %s is after the snapshot's %s", s.LastReported.Format(time.RFC3339), at.Format(time.RFC3339))
	}
	return s, nil
}

// Occupied is the number of docking points the sample accounts for:
// bikes and docks, available and disabled (docks available counted 0
// when unlimited).
func (s *Sample) Occupied() int {
	n := s.BikesAvailable + s.BikesDisabled + s.DocksDisabled
	if s.DocksAvailable != nil {
		n += *s.DocksAvailable
	}
	return n
}

// Encode writes m as JSON.
func Encode(m *Message) ([]byte, error) {
	return json.Marshal(m)
}

// MsgID is the JetStream de-duplication id of part `part` of a feed's
// snapshot at `at`.
func MsgID(feed string, at time.Time, part int) string {
	return fmt.Sprintf("%s/%d/%d", feed, at.Unix(), part)
}
