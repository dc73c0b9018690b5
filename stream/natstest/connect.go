package natstest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream connects to url and returns its JetStream context; the
// connection closes when the test ends.
func JetStream(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	_, js := Client(t, url)
	return js
}

// Client connects to url with opts and returns the connection and its
// JetStream context; the connection closes when the test ends.
func Client(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}
