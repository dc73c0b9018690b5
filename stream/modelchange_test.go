package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/wire"
	"github.com/rs/zerolog"
)

// TestRestoreRefusesChangedModel: a snapshot records the digest of the
// model its configuration built; restored under a configuration that
// builds another model it is refused with ErrModelChanged and a message
// that says what to do, the runner keeping its prior state; under the
// same configuration, or from a snapshot that predates digests, it is
// restored.
func TestRestoreRefusesChangedModel(t *testing.T) {
	ctx := context.Background()
	c, m := restoreConfig(false)
	store := &memStore{}
	a := newTestRunner(t, c, m, newMemSink(), store)
	if err := a.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	for i, msg := range restoreFeed(5) {
		a.handle(ctx, input{msg: msg, seq: uint64(i + 1), at: time.Unix(0, 0)})
	}
	a.writeSnapshot("test")
	for _, tc := range []struct {
		name    string
		change  func(m *config.ModelConfig)
		refused bool
	}{
		{"same configuration", func(*config.ModelConfig) {}, false},
		{"name of a default written out", func(m *config.ModelConfig) { m.Model.Likelihood = "diffusion" }, false},
		{"temporal variance", func(m *config.ModelConfig) { m.Model.Temporal[0].Variance = 6.5 }, true},
		{"another kernel", func(m *config.ModelConfig) { m.Model.Temporal[0].Kernel = "matern52" }, true},
		{"noise variance", func(m *config.ModelConfig) { m.Model.NoiseVariance = 1.4 }, true},
		{"diffusion sink", func(m *config.ModelConfig) { m.Model.Diffusion.Sink = 0.3 }, true},
		{"likelihood", func(m *config.ModelConfig) { m.Model.Likelihood = "tobit" }, true},
		{"a prior mean", func(m *config.ModelConfig) { *m = withMean(c, *m) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m2 := m
			m2.Model.Temporal = append([]spec.Temporal(nil), m.Model.Temporal...)
			tc.change(&m2)
			b := newTestRunner(t, c, m2, newMemSink(), store)
			err := b.Restore(ctx)
			switch {
			case !tc.refused && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.refused && b.Applied() != a.Applied():
				t.Fatalf("restored up to %d, want %d", b.Applied(), a.Applied())
			case tc.refused && !errors.Is(err, ErrModelChanged):
				t.Fatalf("restore: %v, want ErrModelChanged", err)
			case tc.refused && (!strings.Contains(err.Error(), "remove the model's snapshot") || b.Applied() != 0):
				t.Fatalf("restore: %v; applied %d, want a message saying what to do and no state", err, b.Applied())
			}
		})
	}

	// A snapshot written before digests restores (with a warning).
	old := newTestRunner(t, c, m, newMemSink(), &memStore{})
	for i, msg := range restoreFeed(5) {
		old.handle(ctx, input{msg: msg, seq: uint64(i + 1), at: time.Unix(0, 0)})
	}
	old.digest = nil // a snapshot written before digests: none recorded
	old.writeSnapshot("test")
	changed := m
	changed.Model.NoiseVariance = 1.4
	b := newTestRunner(t, c, changed, newMemSink(), old.store)
	if err := b.Restore(ctx); err != nil || b.Applied() == 0 {
		t.Fatalf("snapshot without a digest: %v, applied %d", err, b.Applied())
	}
}

// TestNewModelFileRefusedBySnapshot: the daemon's case — restarted with a
// model_file that holds other hyperparameters, the model's file snapshot
// is refused with a message naming the model file and the snapshot files
// to remove.
func TestNewModelFileRefusedBySnapshot(t *testing.T) {
	ctx := context.Background()
	path := writeModelFile(t, modelFileConfig, hubsModel)
	snaps := t.TempDir()
	load := func() (*config.Config, config.ModelConfig) {
		c, err := config.LoadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		c.Snapshot.Dir = snaps
		return &c, c.Models[0]
	}
	c, m := load()
	a, err := NewRunner(c, m, newMemSink(), zerolog.Nop(), NewMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	a.writeSnapshot("test")
	refit := strings.Replace(hubsModel, "variance = 1.5369712037011103", "variance = 2.25", 1)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "hubs.model.toml"), []byte(refit), 0o644); err != nil {
		t.Fatal(err)
	}
	c, m = load()
	b, err := NewRunner(c, m, newMemSink(), zerolog.Nop(), NewMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = b.Restore(ctx)
	if !errors.Is(err, ErrModelChanged) || !strings.Contains(err.Error(), "model_file hubs.model.toml") ||
		!strings.Contains(err.Error(), filepath.Join(snaps, "hubs.snap")) {
		t.Fatalf("restart with a new model_file: %v", err)
	}
	t.Log(err)
}

// TestChangedModelEstimatesGetNewIDs: a model restarted from a changed
// configuration (its snapshot removed, as the refusal says) re-filters
// the same input; its estimates carry the new model digest and ids that
// differ from every id the old model published, so JetStream's duplicate
// window (ids within 10 minutes) does not drop them, while the same
// configuration again gives the same ids and bytes (a replay stays a
// duplicate). Before the fix the ids were <model>/<bin>/<kind>/<revision>
// for both models.
func TestChangedModelEstimatesGetNewIDs(t *testing.T) {
	ctx := context.Background()
	c, m := restoreConfig(false)
	changed := m
	changed.Model.Temporal = append([]spec.Temporal(nil), m.Model.Temporal...)
	changed.Model.NoiseVariance = 1.4
	run := func(mc config.ModelConfig) (*memSink, string) {
		sink := newMemSink()
		r := newTestRunner(t, c, mc, sink, &memStore{})
		if err := r.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		for i, msg := range restoreFeed(8) {
			r.handle(ctx, input{msg: msg, seq: uint64(i + 1), at: time.Unix(0, 0)})
		}
		return sink, r.digestID()
	}
	old, oldDigest := run(m)
	again, _ := run(m)
	nw, newDigest := run(changed)
	if len(old.byID) == 0 || oldDigest == newDigest || len(oldDigest) != wire.ModelDigestChars {
		t.Fatalf("%d outputs; digests %q and %q: want outputs and two digests of %d characters", len(old.byID), oldDigest, newDigest, wire.ModelDigestChars)
	}
	for id, data := range old.byID {
		if !bytes.Equal(again.byID[id], data) {
			t.Errorf("the same configuration again: %s differs or is missing", id)
		}
		if _, ok := nw.byID[id]; ok {
			t.Errorf("the changed model reuses id %s: JetStream would drop its estimate as a duplicate", id)
		}
	}
	for id, data := range nw.byID {
		var lm wire.LatentMessage
		if err := json.Unmarshal(data, &lm); err != nil {
			t.Fatal(err)
		}
		if lm.ModelDigest != newDigest || lm.MsgID() != id || !strings.HasSuffix(id, "/"+newDigest) {
			t.Errorf("changed model's output %s: model_digest %q, want %q in the message and at the end of its id", id, lm.ModelDigest, newDigest)
		}
	}
}
