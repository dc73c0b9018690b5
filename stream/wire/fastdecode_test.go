package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fastDecodeSeeds are messages of every form, canonical and not.
var fastDecodeSeeds = []string{
	`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1,"supply":2}`,
	`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1,"supply":1,"censored":true}`,
	` { "censored" : false , "demand":-0.5e-3,"schema":1,"model":"m","product":"p 1","bin_start":"2024-01-01T00:00:00+02:00"}` + "\n",
	`{"schema":1,"model":"m","watermark":"2024-01-01T00:00:00Z"}`,
	`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","observations":[{"product":"a","demand":1}]}`,
	`{"schema":1,"Model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1}`,
	`{"schema":1,"model":"m","model":"n","bin_start":"2024-01-01T00:00:00Z","product":"a"}`,
	`{"schema":1.0,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1e400}`,
	`{"schema":1,"model":"m\u0041","bin_start":"2024-01-01T24:00:00Z","product":"a","demand":null}`,
	`{"schema":01,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1}}`,
	`{}`, `null`, `{"schema":1,}`, `{"schema":99999999999999999999}`, `{"demand":-}`, `{"censored":truex}`,
}

// TestDecodeObsFastTakesCanonical: the messages Replay and producers
// write in the usual way take the fast path.
func TestDecodeObsFastTakesCanonical(t *testing.T) {
	start := time.Date(2024, 1, 1, 5, 0, 0, 0, time.UTC)
	d, u, c := 3.0, 2.5, true
	for _, m := range []ObsMessage{
		{Schema: SchemaVersion, Model: "m0", BinStart: &start, Product: "p0", Demand: &d},
		{Schema: SchemaVersion, Model: "m0", BinStart: &start, Product: "p0", Demand: &u, Supply: &u, Censored: &c},
		{Schema: SchemaVersion, Model: "m0", Watermark: &start},
	} {
		data, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := decodeObsFast(data); !ok {
			t.Errorf("%s: not taken by the fast path", data)
		}
	}
}

// FuzzDecodeObsFast: whatever the fast path accepts, encoding/json
// decodes to the same message.
func FuzzDecodeObsFast(f *testing.F) {
	for _, s := range fastDecodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeObsFast(data)
		if !ok {
			return
		}
		slow, rej := decodeObsJSON(data)
		if rej != nil {
			t.Fatalf("%q: fast path accepted, encoding/json: %v", data, rej)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast path %+v, encoding/json %+v", data, fast, slow)
		}
	})
}
