// Package stream runs one model on a stream of bins: the Runner takes
// decoded input messages (stream/wire), assembles them into bins by event
// time (assemble.go), filters each bin as it closes and publishes its
// estimate and forecasts (runner.go), keeps the window of recent bins
// (window.go), re-smooths and re-learns in the background and swaps the
// result in (resmooth.go), and snapshots and restores its whole state
// (snapshots.go, state.go).
//
// A runner knows nothing of NATS: its outputs go to a Sink and its
// acknowledgements to each input's Acker, both small interfaces (the
// daemon gives it the NATS publisher, tests an in-memory recorder), and
// its state to a snapshot.Store. Package daemon wires runners to NATS;
// stream/cluster decides which instance runs which model.
package stream
