package wire

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// appendLatent appends m as encoding/json would marshal it, without
// reflection. It returns false (and the caller marshals with
// encoding/json) for anything outside the common case: a non-finite
// number, a string that needs escaping, a time not in UTC or outside
// the years 0–9999. TestAppendLatentMatchesJSON checks the bytes.
func appendLatent(b []byte, m *LatentMessage) ([]byte, bool) {
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"schema":`)
	w.b = strconv.AppendInt(w.b, int64(m.Schema), 10)
	w.raw(`,"model":`)
	w.str(m.Model)
	w.raw(`,"kind":`)
	w.str(m.Kind)
	w.raw(`,"bin_start":`)
	w.time(m.BinStart)
	w.raw(`,"bin_end":`)
	w.time(m.BinEnd)
	w.raw(`,"revision":`)
	w.b = strconv.AppendInt(w.b, int64(m.Revision), 10)
	if m.ModelDigest != "" {
		w.raw(`,"model_digest":`)
		w.str(m.ModelDigest)
	}
	w.raw(`,"estimates":`)
	w.estimates(m.Estimates)
	if len(m.Forecasts) > 0 {
		w.raw(`,"forecasts":[`)
		for i := range m.Forecasts {
			if i > 0 {
				w.raw(",")
			}
			w.forecast(&m.Forecasts[i])
		}
		w.raw("]")
	}
	if m.Missing != "" {
		w.raw(`,"missing":`)
		w.str(m.Missing)
	}
	w.raw("}")
	return w.b, w.ok
}

// jsonWriter appends JSON for the estimate (appendLatent) and input
// (appendObs) encoders; ok turns false at the first value it cannot
// write exactly as encoding/json does.
type jsonWriter struct {
	b  []byte
	ok bool
}

func (w *jsonWriter) raw(s string) { w.b = append(w.b, s...) }

// str writes a string that needs no escaping (encoding/json escapes
// control characters, quotes, backslashes, <, > and &, and rewrites
// non-ASCII it finds invalid).
func (w *jsonWriter) str(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			w.ok = false
			return
		}
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, s...)
	w.b = append(w.b, '"')
}

// time writes a UTC time as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds as needed).
func (w *jsonWriter) time(t time.Time) {
	if t.Location() != time.UTC {
		w.ok = false
		return
	}
	w.b = append(w.b, '"')
	n := len(w.b)
	w.b = t.AppendFormat(w.b, time.RFC3339Nano)
	if len(w.b) < n+5 || w.b[n+4] != '-' { // not a four-digit year
		w.ok = false
		return
	}
	w.b = append(w.b, '"')
}

// float writes f as encoding/json does: like strconv's shortest form,
// with an exponent only below 1e-6 or from 1e21, and no leading zero in
// a negative exponent.
func (w *jsonWriter) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.ok = false
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	w.b = strconv.AppendFloat(w.b, f, format, -1, 64)
	if format == 'e' {
		b := w.b
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			w.b = b[:n-1]
		}
	}
}

func (w *jsonWriter) boolean(v bool) {
	if v {
		w.raw("true")
	} else {
		w.raw("false")
	}
}

func (w *jsonWriter) estimates(es []Estimate) {
	if es == nil {
		w.raw("null")
		return
	}
	w.raw("[")
	for i := range es {
		if i > 0 {
			w.raw(",")
		}
		w.estimate(&es[i])
	}
	w.raw("]")
}

func (w *jsonWriter) estimate(e *Estimate) {
	w.raw(`{"product":`)
	w.str(e.Product)
	w.raw(`,"mean":`)
	w.float(e.Mean)
	w.raw(`,"var":`)
	w.float(e.Var)
	w.raw(`,"pred_var":`)
	w.float(e.PredVar)
	w.raw(`,"q05":`)
	w.float(e.Q05)
	w.raw(`,"q95":`)
	w.float(e.Q95)
	w.raw(`,"observed":`)
	w.boolean(e.Observed)
	w.raw(`,"censored":`)
	w.boolean(e.Censored)
	if e.Demand != nil {
		w.raw(`,"demand":`)
		w.float(*e.Demand)
	}
	if e.DemandVar != nil {
		w.raw(`,"demand_var":`)
		w.float(*e.DemandVar)
	}
	if e.TurnedAway != nil {
		w.raw(`,"turned_away":`)
		w.float(*e.TurnedAway)
	}
	if e.TurnedAwayVar != nil {
		w.raw(`,"turned_away_var":`)
		w.float(*e.TurnedAwayVar)
	}
	if len(e.Diverted) > 0 {
		w.raw(`,"diverted":[`)
		for i, d := range e.Diverted {
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"product":`)
			w.str(d.Product)
			w.raw(`,"mean":`)
			w.float(d.Mean)
			w.raw("}")
		}
		w.raw("]")
	}
	if e.Lost != nil {
		w.raw(`,"lost":`)
		w.float(*e.Lost)
	}
	w.raw("}")
}

func (w *jsonWriter) forecast(f *Forecast) {
	w.raw(`{"horizon":`)
	w.b = strconv.AppendInt(w.b, int64(f.Horizon), 10)
	w.raw(`,"bin_start":`)
	w.time(f.BinStart)
	w.raw(`,"bin_end":`)
	w.time(f.BinEnd)
	w.raw(`,"estimates":`)
	w.estimates(f.Estimates)
	w.raw("}")
}

// MarshalLatent encodes a message; one whose numbers are not finite (JSON
// has no NaN) goes out as missing instead, so no NaN or Inf is published.
func MarshalLatent(m *LatentMessage) []byte {
	if data, ok := appendLatent(make([]byte, 0, latentSize(m)), m); ok {
		return data
	}
	data, err := json.Marshal(m)
	if err == nil {
		return data
	}
	m.Estimates, m.Forecasts = nil, nil
	m.Missing = "estimate is not finite: " + err.Error()
	data, _ = json.Marshal(m)
	return data
}

// latentSize is about the length of m's JSON.
func latentSize(m *LatentMessage) int {
	n := len(m.Estimates)
	for _, f := range m.Forecasts {
		n += len(f.Estimates) + 1
	}
	return 256 + 192*n + len(m.Missing)
}
