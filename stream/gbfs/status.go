package gbfs

import (
	"encoding/json"
	"fmt"
	"time"
)

// StationStatusFeed is a station_status file.
type StationStatusFeed struct {
	Header
	Stations []StationStatus
	// Problems lists the stations that could not be read.
	Problems []StationProblem
}

// StationStatus is one station's state as the publisher last saw it.
type StationStatus struct {
	ID string
	// BikesAvailable is num_bikes_available (2.3) or
	// num_vehicles_available (3.0): functional vehicles at the station.
	BikesAvailable int
	// DocksAvailable is num_docks_available; -1 when not published
	// (stations with unlimited docking).
	DocksAvailable int
	// BikesDisabled and DocksDisabled are 0 when not published.
	BikesDisabled, DocksDisabled int
	IsInstalled, IsRenting       bool
	IsReturning                  bool
	LastReported                 time.Time
}

type rawStationStatus struct {
	StationID            json.RawMessage `json:"station_id"`
	NumBikesAvailable    json.RawMessage `json:"num_bikes_available"`
	NumVehiclesAvailable json.RawMessage `json:"num_vehicles_available"`
	NumBikesDisabled     json.RawMessage `json:"num_bikes_disabled"`
	NumVehiclesDisabled  json.RawMessage `json:"num_vehicles_disabled"`
	NumDocksAvailable    json.RawMessage `json:"num_docks_available"`
	NumDocksDisabled     json.RawMessage `json:"num_docks_disabled"`
	IsInstalled          json.RawMessage `json:"is_installed"`
	IsRenting            json.RawMessage `json:"is_renting"`
	IsReturning          json.RawMessage `json:"is_returning"`
	LastReported         json.RawMessage `json:"last_reported"`
}

// DecodeStationStatus reads station_status (2.3 or 3.0 field names; a
// station giving both names must give the same count). A station_id
// listed more than once is refused in every copy (ErrDuplicateStation).
func DecodeStationStatus(data []byte) (StationStatusFeed, error) {
	const file = "station_status.json"
	h, body, err := decodeHeader(file, data)
	if err != nil {
		return StationStatusFeed{}, err
	}
	list, err := stationList(file, body)
	if err != nil {
		return StationStatusFeed{}, err
	}
	f := StationStatusFeed{Header: h, Stations: make([]StationStatus, 0, len(list))}
	ids := make([]string, len(list))
	for i, v := range list {
		s, err := decodeStationStatus(v)
		ids[i] = s.ID
		if err != nil {
			f.Problems = append(f.Problems, StationProblem{Station: stationLabel(s.ID, i), Err: err})
			continue
		}
		f.Stations = append(f.Stations, s)
	}
	var dup []StationProblem
	f.Stations, dup = refuseDuplicates(f.Stations, func(s *StationStatus) string { return s.ID }, ids)
	f.Problems = append(f.Problems, dup...)
	return f, nil
}

func decodeStationStatus(v json.RawMessage) (StationStatus, error) {
	var r rawStationStatus
	if err := json.Unmarshal(v, &r); err != nil {
		return StationStatus{}, err
	}
	if !present(r.StationID) {
		return StationStatus{}, fmt.Errorf("station_id missing")
	}
	id, err := decodeID(r.StationID)
	if err != nil {
		return StationStatus{}, fmt.Errorf("station_id: %w", err)
	}
	s := StationStatus{ID: id, DocksAvailable: -1}
	if s.BikesAvailable, err = eitherCount(r.NumBikesAvailable, r.NumVehiclesAvailable, "num_bikes_available", "num_vehicles_available", true); err != nil {
		return s, err
	}
	if s.BikesDisabled, err = eitherCount(r.NumBikesDisabled, r.NumVehiclesDisabled, "num_bikes_disabled", "num_vehicles_disabled", false); err != nil {
		return s, err
	}
	if present(r.NumDocksAvailable) {
		if s.DocksAvailable, err = decodeCount(r.NumDocksAvailable); err != nil {
			return s, fmt.Errorf("num_docks_available: %w", err)
		}
	}
	if present(r.NumDocksDisabled) {
		if s.DocksDisabled, err = decodeCount(r.NumDocksDisabled); err != nil {
			return s, fmt.Errorf("num_docks_disabled: %w", err)
		}
	}
	for _, b := range []struct {
		name string
		raw  json.RawMessage
		dst  *bool
	}{{"is_installed", r.IsInstalled, &s.IsInstalled}, {"is_renting", r.IsRenting, &s.IsRenting}, {"is_returning", r.IsReturning, &s.IsReturning}} {
		if !present(b.raw) {
			return s, fmt.Errorf("%s missing", b.name)
		}
		if *b.dst, err = decodeBool(b.raw); err != nil {
			return s, fmt.Errorf("%s: %w", b.name, err)
		}
	}
	if !present(r.LastReported) {
		return s, fmt.Errorf("last_reported missing")
	}
	if s.LastReported, err = decodeTimestamp(r.LastReported); err != nil {
		return s, fmt.Errorf("last_reported: %w", err)
	}
	return s, nil
}

// eitherCount reads a count given under its 2.3 name or its 3.0 name.
func eitherCount(v2, v3 json.RawMessage, name2, name3 string, required bool) (int, error) {
	var n2, n3 int
	var err error
	if present(v2) {
		if n2, err = decodeCount(v2); err != nil {
			return 0, fmt.Errorf("%s: %w", name2, err)
		}
	}
	if present(v3) {
		if n3, err = decodeCount(v3); err != nil {
			return 0, fmt.Errorf("%s: %w", name3, err)
		}
	}
	switch {
	case present(v2) && present(v3) && n2 != n3:
		return 0, fmt.Errorf("%s %d and %s %d disagree", name2, n2, name3, n3)
	case present(v2):
		return n2, nil
	case present(v3):
		return n3, nil
	case required:
		return 0, fmt.Errorf("%s (2.3) or %s (3.0) missing", name2, name3)
	}
	return 0, nil
}
