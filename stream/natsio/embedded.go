package natsio

import (
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
	// leaf is the server's own certificate (DER) when it serves TLS: the
	// daemon's connection to it pins exactly that certificate.
	leaf []byte
}

// StartEmbedded starts a nats-server listening on addr (host:port; port
// -1 picks a free one) with JetStream stored under storeDir, open to any
// client that reaches addr.
func StartEmbedded(addr, storeDir string, log zerolog.Logger) (*Embedded, error) {
	return StartEmbeddedAuth(addr, storeDir, EmbeddedAuth{}, log)
}

// StartEmbeddedAuth is StartEmbedded with a client listener that requires
// auth, limits users to their roles and serves TLS as auth says (the zero
// EmbeddedAuth requires nothing).
func StartEmbeddedAuth(addr, storeDir string, auth EmbeddedAuth, log zerolog.Logger) (*Embedded, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS listen address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS listen port %q: %w", portText, err)
	}
	// A port already taken fails here, naming it, as an HTTP clash does:
	// the server itself would only never become ready. (Another process
	// can still take it in the moment between; the wait below bounds that.)
	if port > 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, portText))
		if err != nil {
			return nil, fmt.Errorf("nats.listen %s: %w", addr, err)
		}
		_ = ln.Close()
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
		return nil, fmt.Errorf("embedded NATS on %s did not become ready in 30s", addr)
	}
	log.Info().Str("url", srv.ClientURL()).Str("store", storeDir).Bool("auth", !auth.none()).Bool("tls", auth.TLS != nil).
		Int("users", len(auth.Users)).Msg("embedded NATS server started")
	if !auth.none() && auth.TLS == nil && host != "localhost" && !net.ParseIP(host).IsLoopback() {
		log.Warn().Str("listen", addr).Msg("embedded NATS server: credentials and messages cross the network in clear (nats.insecure_no_tls); set nats.server_tls")
	}
	e := &Embedded{srv: srv}
	if auth.TLS != nil && len(auth.TLS.Certificates) > 0 && len(auth.TLS.Certificates[0].Certificate) > 0 {
		e.leaf = auth.TLS.Certificates[0].Certificate[0]
	}
	return e, nil
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
