// Package daemon wires `dcgpd serve`: it starts or connects to NATS,
// creates the streams, builds one stream.Runner per model, binds each
// model's input consumer and hands it the messages (Deliver), answers the
// queries (stream/query), serves health, metrics and the operator's page
// (stream/page), and in cluster mode is the Host that stream/cluster
// starts and stops models through. Where one bin is processed is
// stream.Runner; this package only connects it.
package daemon
