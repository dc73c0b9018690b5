package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendLatentMatchesJSON: the hand-written encoder writes exactly
// the bytes of encoding/json, or declines.
func TestAppendLatentMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	names := jsonTestNames
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.999e-7, 1e-7, 1e21, 9.99e20, -3e-300, 5e-324, math.MaxFloat64, 123456789.125, math.NaN(), math.Inf(1)}
	f := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return floats[rng.IntN(len(floats))]
		case 1:
			return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(60)-30))
		case 2:
			return math.Round(rng.NormFloat64() * 100)
		}
		return rng.Float64()
	}
	est := func(n int) []Estimate {
		if n < 0 {
			return nil
		}
		es := make([]Estimate, n)
		for i := range es {
			es[i] = Estimate{Product: names[rng.IntN(len(names))], Mean: f(), Var: f(), PredVar: f(), Q05: f(), Q95: f(), Observed: rng.IntN(2) == 0, Censored: rng.IntN(2) == 0}
			// The realised demand: both, either or neither field set.
			if rng.IntN(2) == 0 {
				d := f()
				es[i].Demand = &d
			}
			if rng.IntN(2) == 0 {
				v := f()
				es[i].DemandVar = &v
			}
			// The turned-away demand: present or not, with 0 to 2 diversions.
			if rng.IntN(2) == 0 {
				m, v, l := f(), f(), f()
				es[i].TurnedAway, es[i].TurnedAwayVar, es[i].Lost = &m, &v, &l
				for j := rng.IntN(3); j > 0; j-- {
					es[i].Diverted = append(es[i].Diverted, Diversion{Product: names[rng.IntN(len(names))], Mean: f()})
				}
			}
		}
		return es
	}
	tm := func() time.Time { return randomJSONTime(rng) }
	fast := 0
	for i := 0; i < 20000; i++ {
		m := &LatentMessage{Schema: rng.IntN(3), Model: names[rng.IntN(len(names))], Kind: KindFiltered, BinStart: tm(), BinEnd: tm(), Revision: rng.IntN(1000), Estimates: est(rng.IntN(4) - 1)}
		if rng.IntN(3) == 0 {
			m.Missing = names[rng.IntN(len(names))]
		}
		if rng.IntN(2) == 0 {
			m.ModelDigest = fmt.Sprintf("%016x", rng.Uint64())
		}
		for h := rng.IntN(3) - 1; h >= 0; h-- {
			m.Forecasts = append(m.Forecasts, Forecast{Horizon: h, BinStart: tm(), BinEnd: tm(), Estimates: est(rng.IntN(3) - 1)})
		}
		if rng.IntN(5) == 0 {
			m.Forecasts = []Forecast{}
		}
		got, ok := appendLatent(nil, m)
		want, err := json.Marshal(m)
		if !ok {
			continue
		}
		fast++
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("appendLatent:\n%s\nencoding/json (%v):\n%s", got, err, want)
		}
	}
	if fast < 500 {
		t.Fatalf("only %d of 20000 messages took the fast path", fast)
	}
}

// FuzzAppendLatent: for any numbers and names, the fast encoder writes
// what encoding/json writes or declines.
func FuzzAppendLatent(f *testing.F) {
	f.Add("m", "p", 1.5, -2.25e-9, 3e21, int64(1700000000), int64(0))
	f.Fuzz(func(t *testing.T, model, product string, a, b, c float64, sec, nsec int64) {
		at := time.Unix(sec, nsec).UTC()
		es := []Estimate{{Product: product, Mean: a, Var: b, PredVar: c, Q05: a - b, Q95: a + c, Observed: true}}
		own := []Estimate{es[0]}
		own[0].Demand, own[0].DemandVar = &c, &a
		own[0].TurnedAway, own[0].TurnedAwayVar, own[0].Lost = &b, &c, &a
		own[0].Diverted = []Diversion{{Product: product, Mean: b}}
		m := &LatentMessage{Schema: 1, Model: model, Kind: KindSmoothed, BinStart: at, BinEnd: at.Add(time.Hour), Estimates: own,
			Forecasts: []Forecast{{Horizon: 1, BinStart: at, BinEnd: at, Estimates: es}}}
		got, ok := appendLatent(nil, m)
		if !ok {
			return
		}
		want, err := json.Marshal(m)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("appendLatent:\n%s\nencoding/json (%v):\n%s", got, err, want)
		}
	})
}

// jsonTestNames are names for the encoders' differential tests: plain,
// and every kind encoding/json escapes or rewrites.
var jsonTestNames = []string{"p0", "hub-3", "a b", `q"x`, "<b>", "é", "\x01", ""}

// randomJSONTime is a time from years around 0–4000 with or without
// nanoseconds, half of them in UTC and the rest in other zones (which the
// fast encoders decline).
func randomJSONTime(rng *rand.Rand) time.Time {
	t := time.Unix(rng.Int64N(1<<36)-1<<35, rng.Int64N(3)*int64(rng.IntN(1e9)))
	switch rng.IntN(4) {
	case 0:
		return t.In(time.FixedZone("x", 3600))
	case 1:
		return t.Local()
	}
	return t.UTC()
}

// TestMarshalLatentNeverNaN: a message with a non-finite number goes out
// as missing, never as invalid JSON or an empty payload.
func TestMarshalLatentNeverNaN(t *testing.T) {
	m := &LatentMessage{Schema: 1, Model: "m", Kind: KindFiltered, Estimates: []Estimate{NewEstimate("a", math.NaN(), 1, 0)}}
	data := MarshalLatent(m)
	var back LatentMessage
	if err := json.Unmarshal(data, &back); err != nil || back.Missing == "" || len(back.Estimates) != 0 {
		t.Fatalf("%s: %v", data, err)
	}
}
