package stream

import (
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/wire"
)

func testModel() config.ModelConfig {
	m := config.DefaultModelConfig()
	m.Name, m.Bin = "m", config.Duration{Duration: time.Hour}
	m.Origin = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	return m
}

func obsMsg(t *testing.T, s string) *wire.ObsMessage {
	t.Helper()
	m, err := wire.DecodeObs([]byte(s))
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
	cfg.Lateness = config.Duration{Duration: 30 * time.Minute}
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
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T01:00:00Z","product":"b","demand":2,"supply":2}`, nil, 0, wire.ReasonLate, 0},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T02:00:00Z","product":"a","demand":1}`, nil, 1, "", 4},
		// an identical repeat while open: idempotent.
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T02:00:00Z","product":"a","demand":1}`, nil, 0, "", 4},
		// a conflicting repeat: refused, the first kept.
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T02:00:00Z","product":"a","demand":5}`, nil, 0, wire.ReasonDuplicate, 4},
		// bin 4 data moves the clock to 04:00: bin 2 (end 03:00 + 30m)
		// closes; the empty bin 3 (due 04:30) and bin 4 stay open.
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T04:00:00Z","observations":[{"product":"a","demand":1},{"product":"zz","demand":1}]}`, []int64{2}, 1, wire.ReasonProduct, 7},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T04:30:00Z","product":"a","demand":1}`, nil, 0, wire.ReasonTime, 7},
		{`{"schema":1,"model":"m","bin_start":"2024-03-01T04:00:00Z","product":"a","demand":1}`, nil, 0, wire.ReasonFarFuture, 7},
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
		{`{`, wire.ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1,"extra":2}`, wire.ReasonMalformed},
		{`{"schema":2,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1}`, wire.ReasonSchema},
		{`{"schema":1,"bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1}`, wire.ReasonMalformed},
		{`{"schema":1,"model":"m","product":"a","demand":1}`, wire.ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"yesterday","product":"a","demand":1}`, wire.ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":-1}`, wire.ReasonValue},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":"NaN"}`, wire.ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1e300}`, wire.ReasonValue},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":5,"supply":3}`, wire.ReasonValue},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1,"censored":true}`, wire.ReasonValue},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z"}`, wire.ReasonObservations},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","observations":[{"product":"b"}]}`, wire.ReasonMalformed},
		{`{"schema":1,"model":"m","watermark":"2024-01-01T00:00:00Z","product":"a"}`, wire.ReasonMalformed},
		{`{"schema":1,"model":"m","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1} {}`, wire.ReasonMalformed},
	}
	for _, c := range cases {
		_, err := wire.DecodeObs([]byte(c.in))
		rej, ok := err.(*wire.Rejection)
		if !ok || rej.Reason != c.reason {
			t.Errorf("%s: got %v, want reason %s", c.in, err, c.reason)
		}
	}
	big := make([]byte, wire.MaxMessageBytes+1)
	if _, err := wire.DecodeObs(big); err == nil || err.(*wire.Rejection).Reason != wire.ReasonTooLarge {
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
		m, err := wire.DecodeObs(data)
		if err != nil {
			if _, ok := err.(*wire.Rejection); !ok {
				t.Fatalf("error is not a Rejection: %v", err)
			}
			return
		}
		if m.Schema != wire.SchemaVersion || m.Model == "" {
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
			if o.Product == "" || obs.Y < 0 || obs.Y > wire.MaxDemand || math.IsInf(obs.Y, 0) || (!math.IsNaN(obs.Y) && obs.Y > obs.Supply) {
				t.Fatalf("accepted bad observation %+v", obs)
			}
		}
	})
}
