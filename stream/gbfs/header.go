package gbfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Header is the part common to every GBFS file.
type Header struct {
	// LastUpdated is when the publisher last updated the file.
	LastUpdated time.Time
	// TTL is how long the file may be cached; 0 = refresh every time.
	TTL time.Duration
	// Version is the file's GBFS version ("2.3", "3.0"); empty when absent
	// (before 1.1 the field did not exist).
	Version string
}

// rawHeader is a file's envelope before its fields are checked.
type rawHeader struct {
	LastUpdated json.RawMessage `json:"last_updated"`
	TTL         json.RawMessage `json:"ttl"`
	Version     string          `json:"version"`
	Data        json.RawMessage `json:"data"`
}

// maxTTL bounds a file's ttl (a year): a larger one is not a cache time.
const maxTTL = 365 * 24 * time.Hour

// decodeHeader reads a file's envelope and returns its header and data.
func decodeHeader(file string, data []byte) (Header, json.RawMessage, error) {
	var raw rawHeader
	if err := json.Unmarshal(data, &raw); err != nil {
		return Header{}, nil, fmt.Errorf("%s: malformed JSON: %w", file, err)
	}
	var h Header
	if len(raw.LastUpdated) == 0 || string(raw.LastUpdated) == "null" {
		return Header{}, nil, fmt.Errorf("%s: last_updated missing", file)
	}
	t, err := decodeTimestamp(raw.LastUpdated)
	if err != nil {
		return Header{}, nil, fmt.Errorf("%s: last_updated: %w", file, err)
	}
	h.LastUpdated = t
	if len(raw.TTL) == 0 || string(raw.TTL) == "null" {
		return Header{}, nil, fmt.Errorf("%s: ttl missing", file)
	}
	ttl, err := decodeCount(raw.TTL)
	if err != nil {
		return Header{}, nil, fmt.Errorf("%s: ttl: %w", file, err)
	}
	if time.Duration(ttl) > maxTTL/time.Second {
		return Header{}, nil, fmt.Errorf("%s: ttl %d s exceeds a year", file, ttl)
	}
	h.TTL = time.Duration(ttl) * time.Second
	h.Version = raw.Version
	if len(raw.Data) == 0 || string(raw.Data) == "null" {
		return Header{}, nil, fmt.Errorf("%s: data missing", file)
	}
	return h, raw.Data, nil
}

// decodeTimestamp reads a GBFS timestamp: POSIX seconds (before 3.0) or
// an RFC 3339 string (3.0). A string without a UTC offset, which some
// publishers send, is read as UTC.
func decodeTimestamp(v json.RawMessage) (time.Time, error) {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return time.Time{}, err
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
			if t, err := time.Parse(layout, s); err == nil {
				if t.Year() < 1970 || t.Year() > 9999 {
					break
				}
				return t.UTC(), nil
			}
		}
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", s)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s is neither POSIX seconds nor an RFC 3339 string", clip(v))
	}
	// Years 1970 to 9999 in seconds; a millisecond timestamp (a common
	// publisher slip) falls outside and is refused, not misread.
	if math.IsNaN(f) || f < 0 || f > 253402300799 {
		return time.Time{}, fmt.Errorf("%s is not POSIX seconds between 1970 and 9999", clip(v))
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// maxCount bounds every count (bikes, docks, capacity, ttl in seconds).
const maxCount = 1 << 31

// decodeCount reads a non-negative integer (a float with no fraction is
// accepted: some publishers write 3.0).
func decodeCount(v json.RawMessage) (int, error) {
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not a number", clip(v))
	}
	if f < 0 || f != math.Trunc(f) || f >= maxCount {
		return 0, fmt.Errorf("%s is not a count (a non-negative integer)", clip(v))
	}
	return int(f), nil
}

// decodeBool reads a JSON boolean, or 0/1 as GBFS 1.x feeds wrote them.
func decodeBool(v json.RawMessage) (bool, error) {
	switch string(bytes.TrimSpace(v)) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%s is not a boolean", clip(v))
}

// decodeID reads an identifier: a string, or a number some publishers
// write instead (kept as its decimal text).
func decodeID(v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", err
		}
		if s == "" {
			return "", fmt.Errorf("empty identifier")
		}
		return s, nil
	}
	if _, err := strconv.ParseFloat(string(v), 64); err != nil || len(v) == 0 {
		return "", fmt.Errorf("%s is not an identifier", clip(v))
	}
	return string(v), nil
}

// present reports whether a field was given (absent and null are both
// "not given").
func present(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// clip shortens a raw value for an error message.
func clip(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}
