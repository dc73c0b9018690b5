package stream

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func testModel() ModelConfig {
	m := DefaultModelConfig()
	m.Name, m.Bin = "m", Duration{time.Hour}
	m.Origin = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	return m
}

func obsMsg(t *testing.T, s string) *ObsMessage {
	t.Helper()
	m, err := DecodeObs([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

// TestAssemblerCloses walks one feed through the closing rules: complete
// bins close at once, in order; an incomplete bin waits until the clock
// passes its end plus the lateness; a bin with no message closes empty;
// duplicates are idempotent; late data is refused or kept.
func TestAssemblerCloses(t *testing.T) {
	cfg := testModel()
	cfg.Lateness = Duration{30 * time.Minute}
	a := NewAssembler([]string{"a", "b"}, cfg)
	now := time.Now()
	type step struct {
		msg        string
		wantClosed []int64
		accepted   int
		rejected   string
		// oldest is the lowest sequence left in an open bin after the
		// step (message i has sequence i+1).
		oldest uint64
	}
	steps := []step{
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T01:00:00Z","product":"a","demand":3}`, nil, 1, "", 1},
		// b completes bin 1: it closes at once.
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T01:00:00Z","product":"b","demand":2,"supply":2}`, []int64{1}, 1, "", 0},
		// the same observation again, after the bin closed: late.
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T01:00:00Z","product":"b","demand":2,"supply":2}`, nil, 0, ReasonLate, 0},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T02:00:00Z","product":"a","demand":1}`, nil, 1, "", 4},
		// an identical repeat while open: idempotent.
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T02:00:00Z","product":"a","demand":1}`, nil, 0, "", 4},
		// a conflicting repeat: refused, the first kept.
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T02:00:00Z","product":"a","demand":5}`, nil, 0, ReasonDuplicate, 4},
		// bin 4 data moves the clock to 04:00: bin 2 (end 03:00 + 30m)
		// closes; the empty bin 3 (due 04:30) and bin 4 stay open.
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T04:00:00Z","observations":[{"product":"a","demand":1},{"product":"zz","demand":1}]}`, []int64{2}, 1, ReasonProduct, 7},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T04:30:00Z","product":"a","demand":1}`, nil, 0, ReasonTime, 7},
		{`{"schema":1,"model":"m","bin_start":"2024-03-01T04:00:00Z","product":"a","demand":1}`, nil, 0, ReasonFarFuture, 7},
		// a watermark at 05:30 closes the empty bin 3 and bin 4.
		{`{"schema":1,"model":"m","watermark":"2024-01-01T05:30:00Z"}`, []int64{3, 4}, 0, "", 0},
	}
	for i, s := range steps {
		r := a.Add(obsMsg(t, s.msg), uint64(i+1), now)
		if r.Accepted != s.accepted {
			t.Fatalf("step %d: accepted %d, want %d", i, r.Accepted, s.accepted)
		}
		gotRej := ""
		if len(r.Rejected) > 0 {
			gotRej = r.Rejected[0].Reason
		}
		if gotRej != s.rejected {
			t.Fatalf("step %d: rejection %q, want %q", i, gotRej, s.rejected)
		}
		closed := a.Ready(nil)
		if got := a.OldestOpenSeq(); got != s.oldest {
			t.Fatalf("step %d: oldest open sequence %d, want %d", i, got, s.oldest)
		}
		if len(closed) != len(s.wantClosed) {
			t.Fatalf("step %d: closed %d bins, want %v", i, len(closed), s.wantClosed)
		}
		for j, cb := range closed {
			if cb.Index != s.wantClosed[j] {
				t.Fatalf("step %d: closed bin %d, want %d", i, cb.Index, s.wantClosed[j])
			}
			switch cb.Index {
			case 1:
				if cb.Observed != 2 || !cb.Obs[1].Censored || cb.Obs[0].Censored {
					t.Fatalf("bin 1: %+v", cb)
				}
			case 2:
				if cb.Observed != 1 || cb.Obs[0].Y != 1 || !math.IsNaN(cb.Obs[1].Y) {
					t.Fatalf("bin 2: a missing product must stay missing, the first value kept: %+v", cb)
				}
			case 3:
				if cb.Observed != 0 {
					t.Fatalf("bin 3 should be empty: %+v", cb)
				}
			}
		}
	}
}

// TestAssemblerKeepsLate: with late = "resmooth", data for a closed bin
// comes back for the window instead of being refused.
func TestAssemblerKeepsLate(t *testing.T) {
	cfg := testModel()
	cfg.Late = "resmooth"
	a := NewAssembler([]string{"a"}, cfg)
	a.Add(obsMsg(t, `{"schema":1,"model":"m","bin_start":"2024-01-01T01:00:00Z","product":"a","demand":3}`), 0, time.Now())
	if got := len(a.Ready(nil)); got != 1 {
		t.Fatalf("closed %d", got)
	}
	r := a.Add(obsMsg(t, `{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":4}`), 0, time.Now())
	if len(r.Late) != 1 || r.Late[0].Index != 0 || r.Late[0].Obs.Y != 4 || len(r.Rejected) != 0 {
		t.Fatalf("late result %+v", r)
	}
}

// TestDecodeObsRejects names every malformed input with its reason.
func TestDecodeObsRejects(t *testing.T) {
	cases := []struct{ in, reason string }{
		{`{`, ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1,"extra":2}`, ReasonMalformed},
		{`{"schema":2,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1}`, ReasonSchema},
		{`{"schema":1,"bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1}`, ReasonMalformed},
		{`{"schema":1,"model":"m","product":"a","demand":1}`, ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"yesterday","product":"a","demand":1}`, ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":-1}`, ReasonValue},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":"NaN"}`, ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1e300}`, ReasonValue},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":5,"supply":3}`, ReasonValue},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1,"censored":true}`, ReasonValue},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z"}`, ReasonObservations},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","observations":[{"product":"b"}]}`, ReasonMalformed},
		{`{"schema":1,"model":"m","watermark":"2024-01-01T00:00:00Z","product":"a"}`, ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1} {}`, ReasonMalformed},
	}
	for _, c := range cases {
		_, err := DecodeObs([]byte(c.in))
		rej, ok := err.(*Rejection)
		if !ok || rej.Reason != c.reason {
			t.Errorf("%s: got %v, want reason %s", c.in, err, c.reason)
		}
	}
	big := make([]byte, MaxMessageBytes+1)
	if _, err := DecodeObs(big); err == nil || err.(*Rejection).Reason != ReasonTooLarge {
		t.Errorf("oversized message: %v", err)
	}
}

// FuzzDecodeObs: whatever the bytes, DecodeObs returns a message that
// satisfies the schema's invariants or a Rejection, never panics.
func FuzzDecodeObs(f *testing.F) {
	for _, s := range []string{
		`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1,"supply":2}`,
		`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","observations":[{"product":"a","demand":1},{"product":"b","supply":0}]}`,
		`{"schema":1,"model":"m","watermark":"2024-01-01T00:00:00Z"}`,
		`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1,"supply":1,"censored":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeObs(data)
		if err != nil {
			if _, ok := err.(*Rejection); !ok {
				t.Fatalf("error is not a Rejection: %v", err)
			}
			return
		}
		if m.Schema != SchemaVersion || m.Model == "" {
			t.Fatalf("accepted %+v", m)
		}
		if m.Watermark != nil {
			return
		}
		if m.BinStart == nil || len(m.Observations) == 0 {
			t.Fatalf("accepted without bin or observations: %+v", m)
		}
		for _, o := range m.Observations {
			obs := toObs(o)
			if o.Product == "" || obs.Y < 0 || obs.Y > maxDemand || math.IsInf(obs.Y, 0) || (!math.IsNaN(obs.Y) && obs.Y > obs.Supply) {
				t.Fatalf("accepted bad observation %+v", obs)
			}
		}
	})
}

// TestMarshalLatentNeverNaN: a message with a non-finite number goes out
// as missing, never as invalid JSON or an empty payload.
func TestMarshalLatentNeverNaN(t *testing.T) {
	m := &LatentMessage{Schema: 1, Model: "m", Kind: KindFiltered, Estimates: []Estimate{NewEstimate("a", math.NaN(), 1, 0)}}
	data := marshalLatent(m)
	var back LatentMessage
	if err := json.Unmarshal(data, &back); err != nil || back.Missing == "" || len(back.Estimates) != 0 {
		t.Fatalf("%s: %v", data, err)
	}
}
