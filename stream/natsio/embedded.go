package natsio

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream/wire"
)

// Embedded is an in-process nats-server with JetStream, for a daemon with
// no server configured, the demo and the tests.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a nats-server listening on addr (host:port; port
// -1 picks a free one) with JetStream stored under storeDir, open to any
// client that reaches addr.
func StartEmbedded(addr, storeDir string, log zerolog.Logger) (*Embedded, error) {
	return StartEmbeddedAuth(addr, storeDir, EmbeddedAuth{}, log)
}

// StartEmbeddedAuth is StartEmbedded with a client listener that requires
// auth (the zero EmbeddedAuth requires nothing).
func StartEmbeddedAuth(addr, storeDir string, auth EmbeddedAuth, log zerolog.Logger) (*Embedded, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS listen address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS listen port %q: %w", portText, err)
	}
	if err := os.MkdirAll(storeDir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded NATS store: %w", err)
	}
	opts := &server.Options{Host: host, Port: port, JetStream: true, StoreDir: storeDir, NoSigs: true,
		MaxPayload: wire.EmbeddedMaxPayload, ServerName: "dcgpd-embedded"}
	auth.apply(opts)
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("embedded NATS did not become ready in 30s")
	}
	log.Info().Str("url", srv.ClientURL()).Str("store", storeDir).Bool("auth", !auth.none()).Msg("embedded NATS server started")
	return &Embedded{srv: srv}, nil
}

// ClientURL is where clients connect.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// Server returns the nats-server (for in-process connections).
func (e *Embedded) Server() *server.Server { return e.srv }

// Shutdown stops the server and waits for it.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
