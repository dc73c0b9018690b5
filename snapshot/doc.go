// Package snapshot persists the daemon's per-model state: a versioned,
// checksummed binary file per model holding everything the next bin
// depends on (hyperparameters, filter head, warm-start site, the
// re-smoothing window with its sites, open-bin buffers, an in-flight
// re-smooth's inputs, revision counters and the last applied input
// sequence). Its size is bounded by the window, not the history.
//
// Files are written atomically (temporary file, fsync, rename, fsync of
// the directory) with the previous good snapshot kept beside the current
// one; a corrupt, truncated or incompatible file is refused whole, never
// half-loaded. The package knows nothing of the inference or of NATS: it
// stores plain numbers.
package snapshot
