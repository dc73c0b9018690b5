package gbfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"
)

// StationInformation is a station_information file.
type StationInformation struct {
	Header
	Stations []StationInfo
	// Problems lists the stations that could not be read (the others are
	// in Stations).
	Problems []StationProblem
}

// StationInfo is one station's fixed description.
type StationInfo struct {
	ID       string
	Name     string
	Lat, Lon float64
	// Capacity is the number of docking points; -1 when not published.
	Capacity int
}

// StationProblem is one station a decoder skipped, and why.
type StationProblem struct {
	// Station is the station_id, or "#<index>" when it had none.
	Station string
	Err     error
}

func (p StationProblem) Error() string { return "station " + p.Station + ": " + p.Err.Error() }

type rawStationInfo struct {
	StationID json.RawMessage `json:"station_id"`
	Name      json.RawMessage `json:"name"`
	Lat       *float64        `json:"lat"`
	Lon       *float64        `json:"lon"`
	Capacity  json.RawMessage `json:"capacity"`
}

type rawStationList struct {
	Stations *[]json.RawMessage `json:"stations"`
}

// stationList reads data.stations as raw entries, each decoded on its
// own so that one bad station does not refuse the file.
func stationList(file string, body json.RawMessage) ([]json.RawMessage, error) {
	var raw rawStationList
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("%s: data: %w", file, err)
	}
	if raw.Stations == nil {
		return nil, fmt.Errorf("%s: data.stations missing", file)
	}
	return *raw.Stations, nil
}

// DecodeStationInformation reads station_information. language picks a
// 3.0 station's localized name (else the first given). A station_id
// listed more than once is refused in every copy (ErrDuplicateStation).
func DecodeStationInformation(data []byte, language string) (StationInformation, error) {
	const file = "station_information.json"
	h, body, err := decodeHeader(file, data)
	if err != nil {
		return StationInformation{}, err
	}
	list, err := stationList(file, body)
	if err != nil {
		return StationInformation{}, err
	}
	si := StationInformation{Header: h, Stations: make([]StationInfo, 0, len(list))}
	ids := make([]string, len(list))
	for i, v := range list {
		s, err := decodeStationInfo(v, language)
		ids[i] = s.ID
		if err != nil {
			si.Problems = append(si.Problems, StationProblem{Station: stationLabel(s.ID, i), Err: err})
			continue
		}
		si.Stations = append(si.Stations, s)
	}
	var dup []StationProblem
	si.Stations, dup = refuseDuplicates(si.Stations, func(s *StationInfo) string { return s.ID }, ids)
	si.Problems = append(si.Problems, dup...)
	return si, nil
}

func decodeStationInfo(v json.RawMessage, language string) (StationInfo, error) {
	var r rawStationInfo
	if err := json.Unmarshal(v, &r); err != nil {
		return StationInfo{}, err
	}
	if !present(r.StationID) {
		return StationInfo{}, fmt.Errorf("station_id missing")
	}
	id, err := decodeID(r.StationID)
	if err != nil {
		return StationInfo{}, fmt.Errorf("station_id: %w", err)
	}
	s := StationInfo{ID: id, Capacity: -1}
	if s.Name, err = decodeName(r.Name, language); err != nil {
		return s, fmt.Errorf("name: %w", err)
	}
	if r.Lat == nil || r.Lon == nil || math.Abs(*r.Lat) > 90 || math.Abs(*r.Lon) > 180 {
		return s, fmt.Errorf("lat and lon must be given, within ±90 and ±180")
	}
	s.Lat, s.Lon = *r.Lat, *r.Lon
	if present(r.Capacity) {
		if s.Capacity, err = decodeCount(r.Capacity); err != nil {
			return s, fmt.Errorf("capacity: %w", err)
		}
	}
	return s, nil
}

// decodeName reads a name: a string (2.3) or an array of
// {"text", "language"} (3.0), from which language's text is taken, else
// the first.
func decodeName(v json.RawMessage, language string) (string, error) {
	v = bytes.TrimSpace(v)
	if !present(v) {
		return "", fmt.Errorf("missing")
	}
	if v[0] == '"' {
		var s string
		err := json.Unmarshal(v, &s)
		return s, err
	}
	var loc []struct {
		Text     string `json:"text"`
		Language string `json:"language"`
	}
	if err := json.Unmarshal(v, &loc); err != nil {
		return "", fmt.Errorf("neither a string nor a localized array: %w", err)
	}
	if len(loc) == 0 {
		return "", fmt.Errorf("empty localized array")
	}
	for _, l := range loc {
		if l.Language == language {
			return l.Text, nil
		}
	}
	return loc[0].Text, nil
}

// stationLabel names a station in a problem: its id, else its index.
func stationLabel(id string, i int) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("#%d", i)
}

// shortName cuts a station's name to at most n bytes, at a character
// boundary (the status message bounds its names).
func shortName(name string, n int) string {
	if len(name) <= n {
		return name
	}
	for n > 0 && !utf8.RuneStart(name[n]) {
		n--
	}
	return name[:n]
}
