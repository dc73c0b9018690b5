package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendObsMatchesJSON: the hand-written input encoder writes exactly
// the bytes of encoding/json, or declines; and what it writes decodes to
// the message it encoded.
func TestAppendObsMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	names := jsonTestNames
	floats := []float64{0, math.Copysign(0, -1), 1, 0.1, 1e-6, 9.999e-7, 1e-7, 1e21, 9.99e20, 5e-324, math.MaxFloat64, 123456789.125, math.NaN(), math.Inf(1)}
	f := func() *float64 {
		var v float64
		switch rng.IntN(5) {
		case 0:
			return nil
		case 1:
			v = floats[rng.IntN(len(floats))]
		case 2:
			v = math.Abs(rng.NormFloat64()) * math.Pow(10, float64(rng.IntN(40)-20))
		case 3:
			v = math.Round(math.Abs(rng.NormFloat64()) * 100)
		default:
			v = rng.Float64()
		}
		return &v
	}
	b := func() *bool {
		if rng.IntN(3) == 0 {
			return nil
		}
		v := rng.IntN(2) == 0
		return &v
	}
	tm := func() *time.Time {
		if rng.IntN(5) == 0 {
			return nil
		}
		t := randomJSONTime(rng)
		return &t
	}
	fast := 0
	for i := 0; i < 20000; i++ {
		m := &ObsMessage{Schema: rng.IntN(3), Model: names[rng.IntN(len(names))], BinStart: tm()}
		switch rng.IntN(3) {
		case 0:
			m.Product, m.Demand, m.Supply, m.Censored = names[rng.IntN(len(names))], f(), f(), b()
		case 1:
			for n := rng.IntN(4); n > 0; n-- {
				m.Observations = append(m.Observations, Observation{Product: names[rng.IntN(len(names))], Demand: f(), Supply: f(), Censored: b()})
			}
		default:
			m.Watermark = tm()
		}
		got, ok := appendObs(nil, m)
		want, err := json.Marshal(m)
		if !ok {
			continue
		}
		fast++
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("appendObs:\n%s\nencoding/json (%v):\n%s", got, err, want)
		}
		if enc, err := EncodeObs(m); err != nil || !bytes.Equal(enc, want) {
			t.Fatalf("EncodeObs: %s (%v), want %s", enc, err, want)
		}
	}
	if fast < 2000 {
		t.Fatalf("only %d of 20000 messages took the fast path", fast)
	}
}

// TestEncodeObsFallsBack: a message the fast path declines is still
// encoded (by encoding/json), and one encoding/json refuses is an error.
func TestEncodeObsFallsBack(t *testing.T) {
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))
	d := 3.0
	got, err := EncodeObs(&ObsMessage{Schema: 1, Model: "m", BinStart: &at, Product: "é", Demand: &d})
	if err != nil || !bytes.Contains(got, []byte(`"bin_start":"2024-01-01T00:00:00+01:00"`)) {
		t.Fatalf("fallback: %s (%v)", got, err)
	}
	nan := math.NaN()
	if got, err := EncodeObs(&ObsMessage{Schema: 1, Model: "m", Product: "p", Demand: &nan}); err == nil {
		t.Fatalf("NaN demand encoded as %s", got)
	}
}

// FuzzAppendObs: for any names, numbers and times the fast encoder writes
// what encoding/json writes or declines.
func FuzzAppendObs(f *testing.F) {
	f.Add("m", "p", 1.5, 2.25e-9, true, int64(1700000000), int64(0), false)
	f.Fuzz(func(t *testing.T, model, product string, demand, supply float64, censored bool, sec, nsec int64, bin bool) {
		at := time.Unix(sec, nsec).UTC()
		m := &ObsMessage{Schema: 1, Model: model, BinStart: &at}
		if bin {
			m.Observations = []Observation{{Product: product, Demand: &demand, Supply: &supply, Censored: &censored}, {Product: model}}
		} else {
			m.Product, m.Demand, m.Supply, m.Censored = product, &demand, &supply, &censored
		}
		got, ok := appendObs(nil, m)
		if !ok {
			return
		}
		want, err := json.Marshal(m)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("appendObs:\n%s\nencoding/json (%v):\n%s", got, err, want)
		}
	})
}
