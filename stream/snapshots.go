package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/dcgpd/dcgpd/snapshot"
)

// ErrSnapshotMismatch reports a snapshot that does not fit the configured
// model (other bins, products or hyperparameter layout): the daemon
// refuses to start that model rather than mix the two.
var ErrSnapshotMismatch = errors.New("snapshot does not match the configured model")

// storedWait bounds how long a snapshot waits for the outputs it covers
// to be stored by the server.
const storedWait = 30 * time.Second

// writeSnapshot writes the model's state once every output so far is
// stored, then acknowledges the input it covers. On failure the previous
// snapshot stays, nothing more is acknowledged, and the next trigger
// retries.
func (r *Runner) writeSnapshot(reason string) {
	r.snapDue = false
	began := time.Now()
	r.lastAttempt = began
	if !r.waitStored(storedWait) {
		r.met.snapshots.WithLabelValues(r.cfg.Name, "failed").Inc()
		r.log.Warn().Str("reason", reason).Int64("unstored", r.published-r.confirmed.Load()).Msg("snapshot skipped: outputs not yet stored by the server")
		return
	}
	m := r.snapshotOf()
	m.ConfigDigest = r.digest
	data := snapshot.Marshal(m)
	r.log.Debug().Str("reason", reason).Uint64("applied", m.Applied).Int("bytes", len(data)).Msg("snapshot writing")
	if err := r.store.Write(r.cfg.Name, data); err != nil {
		r.met.snapshots.WithLabelValues(r.cfg.Name, "failed").Inc()
		if n, ok := r.logLimit.Allow(); ok {
			r.log.Error().Err(err).Int("suppressed", n).Msg("snapshot failed; the previous one is kept and input stays unacknowledged until one succeeds")
		}
		return
	}
	r.met.snapshots.WithLabelValues(r.cfg.Name, "written").Inc()
	r.met.snapshotSeconds.Observe(time.Since(began).Seconds())
	r.met.snapshotBytes.Set(float64(len(data)))
	r.dirty, r.lastSnap, r.snapApplied = false, time.Now(), m.Applied
	r.log.Debug().Str("reason", reason).Uint64("applied", m.Applied).Dur("took", time.Since(began)).Msg("snapshot written")
	// Every message up to Applied is in the snapshot; those waiting in an
	// open bin are acknowledged only once their bin is processed, unless
	// they would fill the consumer's ack window (the snapshot holds them,
	// so they are recoverable either way).
	seq := r.frontier()
	if r.acks.len() >= r.maxPending*3/4 {
		seq = m.Applied
	}
	r.ackWhenStored(seq, 0)
}

// Restore loads the model's newest good snapshot, if snapshots are on and
// one exists. A damaged current snapshot is passed over for the previous
// one, with an error logged; with none usable the model starts afresh and
// the consumer replays the input stream from its start. A snapshot of
// another format version, or of other bins or products, is an error:
// the model does not start.
func (r *Runner) Restore(ctx context.Context) error {
	if r.store == nil {
		return nil
	}
	began := time.Now()
	if fs, ok := r.store.(*snapshot.FileStore); ok {
		fs.RemoveTemporary(r.cfg.Name)
	}
	m, g, refused, err := snapshot.Load(r.store, r.cfg.Name)
	for _, ref := range refused {
		r.met.snapshotRefused.Inc()
		r.log.Error().Err(ref.Err).Str("generation", ref.Generation.String()).Msg("snapshot refused")
	}
	if err != nil {
		return fmt.Errorf("model %s: %w", r.cfg.Name, err)
	}
	if m == nil {
		if len(refused) > 0 {
			r.log.Error().Msg("no usable snapshot: starting from the prior and replaying the input stream from its start")
		} else {
			r.log.Info().Msg("no snapshot yet: starting from the prior")
		}
		return nil
	}
	switch {
	case len(m.ConfigDigest) == 0:
		r.log.Warn().Str("generation", g.String()).Msg("the snapshot predates configuration digests: a change of the model's configuration since cannot be detected; the next snapshot records it")
	case !bytes.Equal(m.ConfigDigest, r.digest):
		where := "its [models.model] and [models.fit] tables"
		if r.cfg.ModelFile != "" {
			where = "its model_file " + r.cfg.ModelFile
		}
		return fmt.Errorf("model %s: %w (%s now builds another model than the one snapshot %s was made with, digest %.8x, now %.8x): "+
			"restoring it would keep the old hyperparameters. To serve the new configuration, remove the model's snapshot "+
			"(%s) and restart: the model then starts from the new configuration and re-filters the input the stream still holds. "+
			"To keep the running state, restore the previous configuration",
			r.cfg.Name, ErrModelChanged, where, g, m.ConfigDigest, r.digest, r.snapshotWhere())
	}
	r.log.Info().Str("generation", g.String()).Uint64("applied", m.Applied).Int("window", len(m.Window)).Msg("restoring from snapshot")
	if err := r.restoreFrom(ctx, m); err != nil {
		return fmt.Errorf("model %s: %w", r.cfg.Name, err)
	}
	took := time.Since(began)
	r.met.restoreSeconds.Set(took.Seconds())
	r.log.Info().Str("generation", g.String()).Uint64("applied", m.Applied).Int64("bins", m.Processed).Dur("took", took).Msg("restored from snapshot")
	return nil
}

// snapshotWhere says where the model's snapshot is, for an operator who
// has to remove it.
func (r *Runner) snapshotWhere() string {
	if fs, ok := r.store.(*snapshot.FileStore); ok {
		return fmt.Sprintf("%s and %s.prev", filepath.Join(fs.Dir, r.cfg.Name+".snap"), filepath.Join(fs.Dir, r.cfg.Name+".snap"))
	}
	return fmt.Sprintf("key %s of the dcgp_snapshots key-value bucket, e.g. `nats kv del dcgp_snapshots %s`", r.cfg.Name, r.cfg.Name)
}
