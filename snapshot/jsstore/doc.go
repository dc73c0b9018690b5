// Package jsstore keeps model snapshots in JetStream, beside the file
// store of package snapshot and with the same contract (snapshot.Store,
// checked by snapshot/storetest): an object store holds the snapshots and
// a key-value bucket the pointer to each model's current one, written
// with an expected revision, so a writer that another instance has
// overtaken is refused (ErrFenced), and Claim takes a model's pointer
// over at a takeover.
package jsstore
