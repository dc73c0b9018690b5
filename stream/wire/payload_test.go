package wire

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestMaxLatentBytesBounds checks that no message of random numbers is
// longer than the bound, that the bound is reached (it is the encoder's
// own output for the worst case), and that it grows as products and
// horizon do.
func TestMaxLatentBytesBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ np, horizon int }{{1, 0}, {4, 6}, {37, 24}, {200, 1}} {
		names := make([]string, tc.np)
		for k := range names {
			names[k] = fmt.Sprintf("station-%d", k*7919)
		}
		bound := MaxLatentBytes("city", names, tc.horizon)
		for trial := 0; trial < 200; trial++ {
			m := randomLatent(rng, "city", names, tc.horizon)
			if n := len(MarshalLatent(m)); n > bound {
				t.Fatalf("%d products, horizon %d: a message of %d bytes exceeds the bound %d", tc.np, tc.horizon, n, bound)
			}
		}
		if more := MaxLatentBytes("city", append(names, "x"), tc.horizon); more <= bound {
			t.Errorf("one more product: bound %d, not above %d", more, bound)
		}
		if more := MaxLatentBytes("city", names, tc.horizon+1); more <= bound {
			t.Errorf("one more horizon: bound %d, not above %d", more, bound)
		}
	}
}

// randomLatent is a filtered message with numbers of every magnitude the
// encoder writes in either notation.
func randomLatent(rng *rand.Rand, model string, names []string, horizon int) *LatentMessage {
	num := func() float64 {
		v := math.Pow(10, rng.Float64()*60-30) * (rng.Float64() - 0.5)
		if rng.IntN(10) == 0 {
			v = 0
		}
		return v
	}
	// The bin's own estimates carry the realised demand (own), the
	// forecasts not.
	ests := func(own bool) []Estimate {
		es := make([]Estimate, len(names))
		for k, p := range names {
			es[k] = Estimate{Product: p, Mean: num(), Var: num(), PredVar: num(), Q05: num(), Q95: num(),
				Observed: rng.IntN(2) == 0, Censored: rng.IntN(2) == 0}
			if own {
				d, v := num(), num()
				es[k].Demand, es[k].DemandVar = &d, &v
				if rng.IntN(2) == 0 {
					m, mv, l := num(), num(), num()
					es[k].TurnedAway, es[k].TurnedAwayVar, es[k].Lost = &m, &mv, &l
					for j := rng.IntN(MaxDiverted + 1); j > 0; j-- {
						es[k].Diverted = append(es[k].Diverted, Diversion{Product: names[rng.IntN(len(names))], Mean: num()})
					}
				}
			}
		}
		return es
	}
	t0 := time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(1e6)) * time.Hour)
	m := &LatentMessage{Schema: SchemaVersion, Model: model, Kind: KindFiltered, BinStart: t0, BinEnd: t0.Add(time.Hour),
		Revision: rng.IntN(1e6), ModelDigest: fmt.Sprintf("%016x", rng.Uint64()), Estimates: ests(true)}
	for h := 1; h <= horizon; h++ {
		s := t0.Add(time.Duration(h) * time.Hour)
		m.Forecasts = append(m.Forecasts, Forecast{Horizon: h, BinStart: s, BinEnd: s.Add(time.Hour), Estimates: ests(false)})
	}
	return m
}

func TestCheckOutputSize(t *testing.T) {
	names := make([]string, 2000)
	for k := range names {
		names[k] = fmt.Sprintf("hub-%04d", k)
	}
	if err := CheckOutputSize("city", names, 6, EmbeddedMaxPayload); err != nil {
		t.Errorf("2,000 products, horizon 6 on the embedded server: %v", err)
	}
	err := CheckOutputSize("city", names, 6, 1<<20)
	if !errors.Is(err, ErrOutputTooLarge) {
		t.Fatalf("2,000 products, horizon 6 against 1 MiB: got %v, want ErrOutputTooLarge", err)
	}
	t.Log(err)
	if err := CheckOutputSize("long", names[:10], 10000, EmbeddedMaxPayload); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("10 products, horizon 10000: got %v, want ErrOutputTooLarge", err)
	}
}
