// Package snapshot is where the daemon's persistence will live: versioned,
// checksummed snapshots of each model's filter state, sites and
// hyperparameters, written atomically and refused whole when corrupt or
// incompatible (DESIGN.md §5). It holds no code yet; the state it will
// save is filter.State (filter.Online.Save/Restore) plus the model's
// hyperparameters.
package snapshot
