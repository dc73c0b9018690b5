package natstest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream/natsio"
)

// Embedded starts an embedded server with JetStream on a free loopback
// port and a connection to it; both end with the test.
func Embedded(t testing.TB) (*natsio.Embedded, *nats.Conn) {
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
	return emb, nc
}
