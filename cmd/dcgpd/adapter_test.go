package main

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream/natsio"
)

// adapterStream starts an embedded NATS server with a stream named name
// storing subjects, sets NATS_URL to it for an input adapter's command,
// and returns the stream; everything stops with the test.
func adapterStream(t *testing.T, name, subjects string) jetstream.Stream {
	t.Helper()
	emb, err := natsio.StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	nc, err := nats.Connect(emb.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subjects}, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NATS_URL", emb.ClientURL())
	return st
}
