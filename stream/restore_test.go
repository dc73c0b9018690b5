package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/snapshot"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// memSink records outputs by id; every publication is stored at once.
type memSink struct {
	mu   sync.Mutex
	byID map[string][]byte
	dups int
	// conflict records an id published twice with different content.
	conflict string
}

func newMemSink() *memSink { return &memSink{byID: map[string][]byte{}} }

func (s *memSink) Publish(_, id string, data []byte, done func(error)) {
	s.mu.Lock()
	if old, ok := s.byID[id]; ok {
		s.dups++
		if !bytes.Equal(old, data) && s.conflict == "" {
			s.conflict = id
		}
	}
	s.byID[id] = append([]byte(nil), data...)
	s.mu.Unlock()
	done(nil)
}
func (s *memSink) Latest(string, []byte) {}
func (s *memSink) Reject(string, []byte) {}

// memStore keeps snapshots in memory; fail makes writes fail.
type memStore struct {
	cur, prev []byte
	fail      bool
	writes    int
}

func (s *memStore) Write(_ string, data []byte) error {
	if s.fail {
		return errors.New("injected: disk full")
	}
	s.prev, s.cur = s.cur, append([]byte(nil), data...)
	s.writes++
	return nil
}

func (s *memStore) Read(name string, g snapshot.Generation) ([]byte, error) {
	b := s.cur
	if g == snapshot.Previous {
		b = s.prev
	}
	if b == nil {
		return nil, fmt.Errorf("%w: %s", snapshot.ErrNotFound, name)
	}
	return b, nil
}

// countAck records the highest sequence acknowledged (AckAll).
type countAck struct {
	seq  uint64
	high *uint64
}

func (a countAck) Ack() error {
	if a.seq > *a.high {
		*a.high = a.seq
	}
	return nil
}

// restoreConfig is a small diffusion model that re-smooths often, keeps
// late data and forecasts, so a snapshot holds every kind of state.
func restoreConfig(relearn bool) (*config.Config, config.ModelConfig) {
	c := config.DefaultConfig()
	c.Snapshot.Dir = "unused"
	m := config.DefaultModelConfig()
	m.Name, m.Bin, m.Horizon = "city", config.Duration{Duration: time.Hour}, 3
	m.Origin = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Lateness, m.Late = config.Duration{Duration: time.Hour}, "resmooth"
	m.Resmooth = config.ResmoothConfig{EveryBins: 6, ApplyAfter: 3, Window: 12, Relearn: relearn, MaxWait: config.Duration{Duration: time.Minute}}
	for k := 0; k < 4; k++ {
		m.Product = append(m.Product, config.ProductConfig{Name: fmt.Sprintf("p%d", k), Features: []float64{float64(k) * 200, 0}})
	}
	m.Model = spec.Model{Likelihood: "diffusion", NoiseVariance: 1.5,
		Temporal:  []spec.Temporal{{Kernel: "matern32", Variance: 6, Lengthscale: 24}},
		Diffusion: spec.Diffusion{Lengthscale: 250, Sink: 0.2}}
	c.Models = []config.ModelConfig{m}
	return &c, m
}

// restoreFeed is a feed of single observations, some censored, some
// missing, a few late and a few repeated.
func restoreFeed(n int) []*wire.ObsMessage {
	rng := rand.New(rand.NewPCG(21, 22))
	origin := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []*wire.ObsMessage
	for b := 0; b < n; b++ {
		start := origin.Add(time.Duration(b) * time.Hour)
		for k := 0; k < 4; k++ {
			if rng.IntN(10) == 0 {
				continue // missing
			}
			d := math.Max(0, 5+3*math.Sin(float64(b)/4)+rng.NormFloat64())
			o := wire.Observation{Product: fmt.Sprintf("p%d", k), Demand: &d}
			if k == 1 && b%3 == 0 {
				s := math.Floor(d * 0.6)
				o.Demand, o.Supply = &s, &s
			}
			bs := start
			if k == 3 && b%7 == 0 && b > 0 {
				bs = start.Add(-time.Hour) // late: for the bin before
			}
			m := &wire.ObsMessage{Schema: wire.SchemaVersion, Model: "city", BinStart: &bs, Observations: []wire.Observation{o}}
			out = append(out, m)
			if rng.IntN(20) == 0 {
				out = append(out, m) // a repeat
			}
		}
	}
	return out
}

func newTestRunner(t *testing.T, c *config.Config, m config.ModelConfig, sink Sink, store snapshot.Store) *Runner {
	t.Helper()
	r, err := NewRunner(c, m, sink, zerolog.Nop(), NewMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	r.store = store
	return r
}

// withMean gives m a weekly prior mean with seeded values.
func withMean(c *config.Config, m config.ModelConfig) config.ModelConfig {
	rng := rand.New(rand.NewPCG(3, 3))
	no := false
	m.Model.Mean = spec.Mean{Kind: "periodic", Period: 168, Step: 1, Estimate: &no, Values: map[string][]float64{}}
	for _, p := range m.Product {
		vs := make([]float64, 168)
		for i := range vs {
			vs[i] = 3 * rng.NormFloat64()
		}
		m.Model.Mean.Values[p.Name] = vs
	}
	c.Models = []config.ModelConfig{m}
	return m
}

// TestRestoreReproducesOutputs: a model snapshotted at any message and
// restored into a new runner, fed the rest of the stream (and a
// redelivery of what the snapshot holds), publishes exactly what an
// uninterrupted runner publishes: same ids, same bytes; also with a prior
// mean (the window and the snapshot keep the observations as received).
func TestRestoreReproducesOutputs(t *testing.T) {
	for _, tc := range []struct{ relearn, mean, level bool }{{false, false, false}, {true, false, false}, {true, true, false}, {true, true, true}} {
		relearn := tc.relearn
		t.Run(fmt.Sprintf("relearn=%v,mean=%v,level=%v", relearn, tc.mean, tc.level), func(t *testing.T) {
			c, m := restoreConfig(relearn)
			if tc.mean {
				m = withMean(c, m)
			}
			if tc.level {
				// A positive profile, so that its level is estimated.
				m.Model.Mean.Level = spec.LevelScale
				for _, vs := range m.Model.Mean.Values {
					for i := range vs {
						vs[i] += 8
					}
				}
				c.Models = []config.ModelConfig{m}
			}
			feed := restoreFeed(60)
			ctx := context.Background()
			run := func(r *Runner, from, to int) {
				for i := from; i < to; i++ {
					r.handle(ctx, input{msg: feed[i], seq: uint64(i + 1), at: time.Unix(0, 0)})
				}
			}
			ref := newMemSink()
			a := newTestRunner(t, c, m, ref, nil)
			run(a, 0, len(feed))
			if len(ref.byID) == 0 || ref.conflict != "" {
				t.Fatalf("reference run: %d outputs, conflict %q", len(ref.byID), ref.conflict)
			}
			smoothed := 0
			for id := range ref.byID {
				if bytes.Contains([]byte(id), []byte("/smoothed/")) {
					smoothed++
				}
			}
			if smoothed == 0 {
				t.Fatal("the reference run published no smoothed revision: the test would not cover re-smooths")
			}
			if tc.level && a.built.MeanScale() == nil {
				t.Fatal("the reference run never re-estimated the prior mean's level: the test would not cover it")
			}
			rng := rand.New(rand.NewPCG(7, 8))
			for trial := 0; trial < 6; trial++ {
				cut := 1 + rng.IntN(len(feed)-2)
				sink, store := newMemSink(), &memStore{}
				b := newTestRunner(t, c, m, sink, store)
				run(b, 0, cut)
				before := store.writes
				b.writeSnapshot("test")
				if store.writes != before+1 {
					t.Fatal("no snapshot written")
				}
				// The process dies here: b is dropped, its job included.
				if b.cancelJob != nil {
					b.cancelJob()
				}
				r := newTestRunner(t, c, m, sink, store)
				if err := r.Restore(ctx); err != nil {
					t.Fatal(err)
				}
				if r.Applied() != uint64(cut) {
					t.Fatalf("restored at sequence %d, want %d", r.Applied(), cut)
				}
				// A redelivery of the last messages the snapshot holds is
				// skipped, then the rest of the stream.
				run(r, max(0, cut-5), len(feed))
				if sink.conflict != "" {
					t.Fatalf("cut %d: id %s published twice with different content", cut, sink.conflict)
				}
				for id, want := range ref.byID {
					got, ok := sink.byID[id]
					if !ok {
						t.Fatalf("cut %d: %s missing after the restore", cut, id)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("cut %d: %s differs after the restore:\n got %s\nwant %s", cut, id, got, want)
					}
				}
				if len(sink.byID) != len(ref.byID) {
					t.Fatalf("cut %d: %d ids, the uninterrupted run %d", cut, len(sink.byID), len(ref.byID))
				}
			}
		})
	}
}

// TestSnapshotFailureHoldsAcks: while the store fails, the runner goes
// on publishing but acknowledges nothing the failed snapshot should have
// covered; once a write succeeds the acknowledgements catch up.
func TestSnapshotFailureHoldsAcks(t *testing.T) {
	c, m := restoreConfig(false)
	c.NATS.MaxAckPending = 10000
	feed := restoreFeed(30)
	store := &memStore{fail: true}
	sink := newMemSink()
	r := newTestRunner(t, c, m, sink, store)
	var high uint64
	ctx := context.Background()
	for i, msg := range feed {
		r.handle(ctx, input{msg: msg, seq: uint64(i + 1), ack: countAck{seq: uint64(i + 1), high: &high}, at: time.Unix(0, 0)})
	}
	if high != 0 || store.writes != 0 {
		t.Fatalf("acknowledged up to %d with %d snapshots written while the store failed", high, store.writes)
	}
	if len(sink.byID) == 0 {
		t.Fatal("publishing stopped while the store failed")
	}
	store.fail = false
	r.writeSnapshot("retry")
	if store.writes != 1 || high == 0 || high > uint64(len(feed)) {
		t.Fatalf("after recovery: %d writes, acknowledged up to %d", store.writes, high)
	}
	if o := r.asm.OldestOpenSeq(); o != 0 && high >= o {
		t.Fatalf("acknowledged %d, but message %d waits in an open bin", high, o)
	}
}

// TestRestoreRefusesMismatch: a snapshot of other bins is refused with
// ErrSnapshotMismatch and the runner keeps its prior state.
func TestRestoreRefusesMismatch(t *testing.T) {
	c, m := restoreConfig(false)
	store := &memStore{}
	a := newTestRunner(t, c, m, newMemSink(), store)
	for i, msg := range restoreFeed(5) {
		a.handle(context.Background(), input{msg: msg, seq: uint64(i + 1), at: time.Unix(0, 0)})
	}
	a.writeSnapshot("test")
	m.Bin = config.Duration{Duration: 30 * time.Minute}
	b := newTestRunner(t, c, m, newMemSink(), store)
	if err := b.Restore(context.Background()); !errors.Is(err, ErrSnapshotMismatch) {
		t.Fatalf("got %v, want ErrSnapshotMismatch", err)
	}
	if b.Applied() != 0 || b.processed != 0 {
		t.Fatal("a refused snapshot was partly loaded")
	}
}

// TestResmoothAbandoned: a re-smooth still running past max_wait at its
// bin is abandoned; the online path goes on and every bin is published.
func TestResmoothAbandoned(t *testing.T) {
	c, m := restoreConfig(false)
	c.Faults.ResmoothPause = time.Hour // never finishes in time
	m.Resmooth.MaxWait = config.Duration{Duration: 20 * time.Millisecond}
	sink := newMemSink()
	r := newTestRunner(t, c, m, sink, nil)
	feed := restoreFeed(30)
	for i, msg := range feed {
		r.handle(context.Background(), input{msg: msg, seq: uint64(i + 1), at: time.Unix(0, 0)})
	}
	filtered, smoothed := 0, 0
	for id := range sink.byID {
		if bytes.Contains([]byte(id), []byte("/smoothed/")) {
			smoothed++
		} else {
			filtered++
		}
	}
	if smoothed != 0 || r.revision != 0 {
		t.Fatalf("%d smoothed revisions, revision %d: the abandoned re-smooth was used", smoothed, r.revision)
	}
	if int64(filtered) != r.processed || r.processed < 28 {
		t.Fatalf("%d filtered estimates for %d processed bins", filtered, r.processed)
	}
}
