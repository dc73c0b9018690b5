package wire

import (
	"strconv"
	"time"
)

// decodeObsFast reads the common shape of an input message — one JSON
// object whose keys are the exact lower-case names of the single
// observation or watermark form, each at most once, with plain ASCII
// strings, numbers, booleans and no nulls — without reflection. It
// returns false for anything else, and the caller then decodes with
// encoding/json, so every message this path accepts decodes exactly as
// encoding/json would decode it (FuzzDecodeObsFast checks that) and
// every error message still comes from encoding/json.
func decodeObsFast(data []byte) (*ObsMessage, bool) {
	s := obsScanner{b: data}
	box := &obsBox{}
	m := &box.m
	var seen uint8
	s.space()
	if !s.take('{') {
		return nil, false
	}
	s.space()
	if s.take('}') {
		return endOfInput(&s, m)
	}
	for {
		key, ok := s.plainString()
		if !ok {
			return nil, false
		}
		s.space()
		if !s.take(':') {
			return nil, false
		}
		s.space()
		bit, ok := s.field(box, key)
		if !ok || seen&bit != 0 {
			return nil, false
		}
		seen |= bit
		s.space()
		if s.take(',') {
			s.space()
			continue
		}
		if s.take('}') {
			return endOfInput(&s, m)
		}
		return nil, false
	}
}

// obsBox holds a message and the values its pointers refer to in one
// allocation.
type obsBox struct {
	m              ObsMessage
	bin, watermark time.Time
	demand, supply float64
	censored       bool
}

// endOfInput accepts m if only white space follows the object.
func endOfInput(s *obsScanner, m *ObsMessage) (*ObsMessage, bool) {
	s.space()
	if s.i != len(s.b) {
		return nil, false
	}
	return m, true
}

// obsScanner walks the bytes of one message.
type obsScanner struct {
	b []byte
	i int
}

// field reads the value of key into box; bit identifies the key.
func (s *obsScanner) field(box *obsBox, key []byte) (bit uint8, ok bool) {
	m := &box.m
	switch string(key) {
	case "schema":
		m.Schema, ok = s.integer()
		return 1 << 0, ok
	case "model":
		var v []byte
		v, ok = s.plainString()
		m.Model = string(v)
		return 1 << 1, ok
	case "product":
		var v []byte
		v, ok = s.plainString()
		m.Product = string(v)
		return 1 << 2, ok
	case "bin_start":
		m.BinStart, ok = &box.bin, s.time(&box.bin)
		return 1 << 3, ok
	case "watermark":
		m.Watermark, ok = &box.watermark, s.time(&box.watermark)
		return 1 << 4, ok
	case "demand":
		m.Demand = &box.demand
		box.demand, ok = s.float()
		return 1 << 5, ok
	case "supply":
		m.Supply = &box.supply
		box.supply, ok = s.float()
		return 1 << 6, ok
	case "censored":
		m.Censored = &box.censored
		box.censored, ok = s.boolean()
		return 1 << 7, ok
	}
	return 0, false
}

func (s *obsScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *obsScanner) take(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString reads a string of printable ASCII without escapes and
// returns its contents.
func (s *obsScanner) plainString() ([]byte, bool) {
	if !s.take('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// time reads a plain string as encoding/json reads a time.Time: with
// its UnmarshalJSON on the quoted bytes.
func (s *obsScanner) time(t *time.Time) bool {
	start := s.i
	if _, ok := s.plainString(); !ok {
		return false
	}
	return t.UnmarshalJSON(s.b[start:s.i]) == nil
}

// number reads a JSON number and reports whether it has a fraction or
// an exponent.
func (s *obsScanner) number() (text []byte, frac, ok bool) {
	start := s.i
	s.take('-')
	switch {
	case s.take('0'):
	case s.digits() == 0:
		return nil, false, false
	}
	if s.take('.') {
		frac = true
		if s.digits() == 0 {
			return nil, false, false
		}
	}
	if s.take('e') || s.take('E') {
		frac = true
		if !s.take('+') {
			s.take('-')
		}
		if s.digits() == 0 {
			return nil, false, false
		}
	}
	return s.b[start:s.i], frac, true
}

func (s *obsScanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// integer reads a number into an int as encoding/json does: no fraction
// or exponent, and in range.
func (s *obsScanner) integer() (int, bool) {
	text, frac, ok := s.number()
	if !ok || frac {
		return 0, false
	}
	n, err := strconv.ParseInt(string(text), 10, 0)
	return int(n), err == nil
}

// float reads a number into a float64 as encoding/json does.
func (s *obsScanner) float() (float64, bool) {
	text, _, ok := s.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(text), 64)
	return f, err == nil
}

func (s *obsScanner) boolean() (bool, bool) {
	rest := s.b[s.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}
