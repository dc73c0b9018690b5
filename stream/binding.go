package stream

import (
	"fmt"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/snapshot"
)

// This file is what the daemon that wires a runner reads and sets on it
// before Run: its configuration, its snapshot store, and the input stream
// its consumer reads.

// Config returns the model's configuration.
func (r *Runner) Config() config.ModelConfig { return r.cfg }

// Store returns where the runner writes its snapshots; nil: snapshots off.
func (r *Runner) Store() snapshot.Store { return r.store }

// SetStore replaces the snapshot store (the daemon's JetStream store, or a
// fenced one in cluster mode). Call it before Restore and Run only.
func (r *Runner) SetStore(s snapshot.Store) { r.store = s }

// BindInputStream records the creation time of the input stream the
// model's consumer reads. It refuses a stream other than the one the
// restored state was read from (the stream was replaced): the sequences
// the state holds would then name other messages.
func (r *Runner) BindInputStream(name string, created time.Time) error {
	ns := created.UnixNano()
	if r.Applied() > 0 && r.stream != 0 && r.stream != ns {
		return fmt.Errorf("%w: it read input stream %s created %s, but the server's was created %s (the stream was replaced; move the snapshot away to start afresh)",
			ErrSnapshotMismatch, name, time.Unix(0, r.stream).UTC().Format(time.RFC3339Nano), created.UTC().Format(time.RFC3339Nano))
	}
	r.stream = ns
	return nil
}
