package stream

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// censorAll is a BinHook that censors every observation it is shown and
// records the calls.
type censorAll struct {
	closing   [][]string
	published []time.Time
}

func (h *censorAll) Closing(_ string, names []string, obs []cvi.Obs, _, _ time.Time) {
	h.closing = append(h.closing, slices.Clone(names))
	for i := range obs {
		if !math.IsNaN(obs[i].Y) {
			obs[i].Censored, obs[i].Supply = true, obs[i].Y
		}
	}
}

func (h *censorAll) Published(_ context.Context, _ string, _ []string, msg *wire.LatentMessage) {
	h.published = append(h.published, msg.BinStart)
}

// TestBinHook: the hook sees each closed bin's observations before the
// online step (its censoring is what the estimates and the window hold),
// each late observation the window keeps, and each published bin.
func TestBinHook(t *testing.T) {
	c, m := restoreConfig(false) // lateness 1h, late = "resmooth"
	r := newTestRunner(t, c, m, newMemSink(), nil)
	h := &censorAll{}
	r.SetBinHook(h)
	origin := m.Origin
	obs := func(bin int, products ...string) *wire.ObsMessage {
		bs := origin.Add(time.Duration(bin) * time.Hour)
		msg := &wire.ObsMessage{Schema: wire.SchemaVersion, Model: "city", BinStart: &bs}
		for _, p := range products {
			y := 3.0
			msg.Observations = append(msg.Observations, wire.Observation{Product: p, Demand: &y})
		}
		return msg
	}
	ctx := context.Background()
	seq := uint64(0)
	feed := func(msg *wire.ObsMessage) {
		seq++
		r.handle(ctx, input{msg: msg, seq: seq, at: time.Unix(0, 0)})
	}
	all := []string{"p0", "p1", "p2", "p3"}
	feed(obs(0, "p0", "p1", "p2")) // p3 missing: bin 0 stays open
	feed(obs(2, all...))           // the clock passes bin 0's end + lateness: bin 0 closes
	feed(obs(3, all...))           // and bin 1's (empty), so bins 1, 2 and 3 close
	feed(obs(0, "p3"))             // late: kept for the re-smooth
	if len(h.published) != 4 || !h.published[0].Equal(origin) || !h.published[3].Equal(origin.Add(3*time.Hour)) {
		t.Fatalf("published bins %v, want 0 to 3", h.published)
	}
	want := [][]string{all, all, all, {"p3"}} // bins 0, 2 and 3 (bin 1 has no observation), the late one
	if !slices.EqualFunc(h.closing, want, slices.Equal) {
		t.Fatalf("closing calls %v, want %v", h.closing, want)
	}
	b := r.win.find(0)
	if b == nil {
		t.Fatal("bin 0 not in the window")
	}
	for k, o := range b.Obs {
		if !o.Censored || o.Supply != 3 {
			t.Errorf("window bin 0, p%d: %+v, want censored at 3", k, o)
		}
	}
}
