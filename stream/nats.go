package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
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
		MaxPayload: EmbeddedMaxPayload, ServerName: "dcgpd-embedded"}
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

// Connect opens a connection to the configured servers, or in process to
// an embedded one, reconnecting forever.
func Connect(c *NATSConfig, emb *Embedded, name string, log zerolog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: closed on purpose
				log.Warn().Err(err).Msg("NATS disconnected")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("NATS reconnected")
		}),
	}
	url, urlAuth, err := stripCredentials(c.URL)
	if err != nil {
		return nil, err
	}
	if emb != nil {
		// Over loopback TCP, not in process: an in-process connection is a
		// net.Pipe, unbuffered, and under a 2-million-message replay the
		// server closed it ("read/write on closed pipe") in 3 of 7 runs of
		// BenchmarkEndToEnd/bin/tobit, after which the client never
		// reconnected. Over TCP the socket buffers absorb the bursts, and a
		// dropped connection reconnects like any other.
		url = emb.ClientURL()
	}
	switch {
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	case c.NKeyFile != "":
		o, err := nats.NkeyOptionFromSeed(c.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats.nkey_file %s: %w", c.NKeyFile, err)
		}
		opts = append(opts, o)
	case urlAuth != nil: // as in nats.go, a URL's credentials win over user and token
		opts = append(opts, urlAuth)
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	if c.TLSCert != "" {
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS at %s: %w", redact(url), err)
	}
	return nc, nil
}

// stripCredentials takes the credentials out of a URL list
// (nats://user:pass@host, nats://token@host) and returns them as a
// connection option, so that no URL the connection reports
// (ConnectedUrlRedacted masks a password but not a token) or an error
// names carries a secret. Every URL that has credentials must have the
// same ones.
func stripCredentials(list string) (string, nats.Option, error) {
	if list == "" {
		return "", nil, nil
	}
	parts := strings.Split(list, ",")
	var info *neturl.Userinfo
	for i, p := range parts {
		p = strings.TrimSpace(p)
		full := p
		if !strings.Contains(full, "://") {
			full = "nats://" + full // as nats.go reads a URL without a scheme
		}
		u, err := neturl.Parse(full)
		if err != nil {
			// The parser's error quotes the URL, credentials and all.
			if strings.Contains(p, "@") {
				return "", nil, fmt.Errorf("nats.url: server %d of the list is not a valid URL (not shown: it holds credentials)", i+1)
			}
			return "", nil, fmt.Errorf("nats.url: %w", err)
		}
		if u.User == nil {
			continue
		}
		if info != nil && info.String() != u.User.String() {
			return "", nil, errors.New("nats.url: the servers have different credentials; give them once (nats.user and nats.password, or nats.token)")
		}
		info, u.User = u.User, nil
		parts[i] = u.String()
	}
	list = strings.Join(parts, ",")
	if info == nil {
		return list, nil, nil
	}
	if pass, ok := info.Password(); ok {
		return list, nats.UserInfo(info.Username(), pass), nil
	}
	return list, nats.Token(info.Username()), nil
}

// redact drops passwords from a URL list for error messages.
func redact(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := neturl.Parse(strings.TrimSpace(p)); err == nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// Stream and bucket names.
const (
	obsStream    = "DCGP_OBS"
	latentStream = "DCGP_LATENT"
	latestBucket = "dcgp_latest"
)

// setupStreams creates or binds the input and output streams and the
// latest-estimate bucket.
func setupStreams(ctx context.Context, js jetstream.JetStream, c *NATSConfig) (jetstream.KeyValue, error) {
	dupes := 10 * time.Minute
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: obsStream, Subjects: []string{c.Prefix + ".obs.>"},
		Storage: jetstream.FileStorage, Replicas: c.Replicas, Duplicates: dupes, MaxMsgSize: MaxMessageBytes}); err != nil {
		return nil, fmt.Errorf("input stream %s: %w", obsStream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: latentStream, Subjects: []string{c.Prefix + ".latent.>"},
		Storage: jetstream.FileStorage, Replicas: c.Replicas, Duplicates: dupes, MaxAge: 7 * 24 * time.Hour}); err != nil {
		return nil, fmt.Errorf("output stream %s: %w", latentStream, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: latestBucket, History: 1, Replicas: c.Replicas,
		Description: "newest filtered estimate message per model"})
	if err != nil {
		return nil, fmt.Errorf("key-value bucket %s: %w", latestBucket, err)
	}
	return kv, nil
}

// natsSink publishes a daemon's outputs: estimates to JetStream (acks
// awaited asynchronously, in order), latest estimates to the key-value
// bucket, rejections on plain subjects.
type natsSink struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	prefix  string
	pending chan pendingPub
	done    chan struct{} // closed when awaitAcks has run every callback
	closing atomic.Bool
	retries atomic.Int64
	limit   *rateLimit
	log     zerolog.Logger
}

// failedFuture stands for a publication that could not be sent at all.
type failedFuture struct {
	jetstream.PubAckFuture
	msg *nats.Msg
	err error
}

func (f failedFuture) Ok() <-chan *jetstream.PubAck { return nil }
func (f failedFuture) Err() <-chan error {
	c := make(chan error, 1)
	c <- f.err
	return c
}
func (f failedFuture) Msg() *nats.Msg { return f.msg }

type pendingPub struct {
	fut  jetstream.PubAckFuture
	done func(error)
}

func newNATSSink(nc *nats.Conn, js jetstream.JetStream, prefix string, log zerolog.Logger) *natsSink {
	s := &natsSink{nc: nc, js: js, prefix: prefix, pending: make(chan pendingPub, 4096), done: make(chan struct{}), log: log,
		limit: newRateLimit(5, time.Minute)}
	go s.awaitAcks()
	return s
}

// awaitAcks resolves publish futures in order and runs their callbacks.
// A publication the server did not confirm (a timeout while it restarts,
// a lost connection) is sent again with the same id until it is stored
// or the sink closes, so outputs are stored in order and none is skipped.
func (s *natsSink) awaitAcks() {
	defer close(s.done)
	for p := range s.pending {
		wait := 50 * time.Millisecond
		for {
			var err error
			select {
			case <-p.fut.Ok():
			case err = <-p.fut.Err():
			}
			// A fenced output (another owner published a newer fence)
			// is refused for good: sending it again cannot help.
			if err == nil || s.closing.Load() || isFenceError(err) {
				p.done(err)
				break
			}
			s.retries.Add(1)
			if n, ok := s.limit.allow(); ok {
				s.log.Warn().Err(err).Int("suppressed", n).Msg("output not confirmed by the server; publishing it again")
			}
			msg := p.fut.Msg()
			for {
				time.Sleep(wait)
				wait = min(2*wait, 5*time.Second)
				fut, perr := s.js.PublishMsgAsync(msg)
				if perr == nil {
					p.fut = fut
					break
				}
				if s.closing.Load() {
					p.fut = failedFuture{msg: msg, err: perr}
					break
				}
			}
		}
	}
}

func (s *natsSink) Publish(subject, msgID string, data []byte, done func(error)) {
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	fut, err := s.js.PublishMsgAsync(m, jetstream.WithMsgID(msgID))
	if err != nil {
		done(err)
		return
	}
	s.pending <- pendingPub{fut: fut, done: done}
}

// Latest writes the key directly on the bucket's subject, without a
// round trip per bin.
func (s *natsSink) Latest(model string, data []byte) {
	if _, err := s.js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + latestBucket + "." + model, Data: data}); err != nil {
		s.log.Debug().Err(err).Msg("latest estimate not stored")
	}
}

func (s *natsSink) Reject(model string, data []byte) {
	_ = s.nc.Publish(s.prefix+".rejected."+model, data)
}

// close waits until every publication's callback has run (its inputs
// acknowledged), at most 10 s: an unanswered publication leaves its
// inputs for redelivery. No Publish may follow.
func (s *natsSink) close() {
	s.closing.Store(true)
	close(s.pending)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.log.Warn().Msg("publications still unanswered at shutdown; their inputs will be redelivered")
	}
}
