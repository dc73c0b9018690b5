package wire

import (
	"encoding/json"
	"strconv"
)

// EncodeObs returns m's JSON, byte for byte what encoding/json writes:
// without reflection for the common case (appendObs), with encoding/json
// for anything else. Replay sends every message through it.
func EncodeObs(m *ObsMessage) ([]byte, error) {
	if b, ok := appendObs(make([]byte, 0, 160+96*len(m.Observations)), m); ok {
		return b, nil
	}
	return json.Marshal(m)
}

// appendObs appends m as encoding/json would marshal it (fields in
// declaration order, omitempty honoured). It returns false for what
// jsonWriter cannot write exactly (a non-finite number, a string that
// needs escaping, a time not in UTC or outside the years 0–9999).
// TestAppendObsMatchesJSON and FuzzAppendObs check the bytes.
func appendObs(b []byte, m *ObsMessage) ([]byte, bool) {
	w := jsonWriter{b: b, ok: true}
	w.raw(`{"schema":`)
	w.b = strconv.AppendInt(w.b, int64(m.Schema), 10)
	w.raw(`,"model":`)
	w.str(m.Model)
	if m.BinStart != nil {
		w.raw(`,"bin_start":`)
		w.time(*m.BinStart)
	}
	if m.Product != "" {
		w.raw(`,"product":`)
		w.str(m.Product)
	}
	if m.Demand != nil {
		w.raw(`,"demand":`)
		w.float(*m.Demand)
	}
	if m.Supply != nil {
		w.raw(`,"supply":`)
		w.float(*m.Supply)
	}
	if m.Censored != nil {
		w.raw(`,"censored":`)
		w.boolean(*m.Censored)
	}
	if len(m.Observations) > 0 {
		w.raw(`,"observations":[`)
		for i := range m.Observations {
			if i > 0 {
				w.raw(",")
			}
			w.observation(&m.Observations[i])
		}
		w.raw("]")
	}
	if m.Watermark != nil {
		w.raw(`,"watermark":`)
		w.time(*m.Watermark)
	}
	w.raw("}")
	return w.b, w.ok
}

func (w *jsonWriter) observation(o *Observation) {
	w.raw(`{"product":`)
	w.str(o.Product)
	w.raw(`,"demand":`)
	if o.Demand == nil {
		w.raw("null")
	} else {
		w.float(*o.Demand)
	}
	if o.Supply != nil {
		w.raw(`,"supply":`)
		w.float(*o.Supply)
	}
	if o.Censored != nil {
		w.raw(`,"censored":`)
		w.boolean(*o.Censored)
	}
	w.raw("}")
}
