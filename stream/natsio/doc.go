// Package natsio is dcgpd's side of NATS: the embedded server and its
// authentication, client connections (Connect), the input and output
// streams and the latest-estimate bucket (SetupStreams), the Publisher
// that sends a daemon's outputs and confirms them in order, and Replay,
// which publishes batch data as input.
package natsio
