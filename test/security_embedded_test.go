package test

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/crypto/bcrypt"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/daemon"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
	"github.com/dcgpd/dcgpd/stream/query"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// The embedded server's and the page's own security, as an operator
// writes it in dcgpd.toml: TLS for the embedded server, users with roles,
// credentials and TLS for the page and its API.

// secTOML decodes the [nats] and [http] tables given as TOML (what an
// operator writes) with secConfig's model and a JetStream store of the
// test's own.
func secTOML(t *testing.T, tables string) config.Config {
	t.Helper()
	c, err := config.DecodeConfig([]byte(tables + "\n[[models]]\nname = \"m\"\nbin = \"1h\"\n[[models.product]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatalf("configuration: %v", err)
	}
	base := secConfig(t)
	c.Models, c.Snapshot, c.Log = base.Models, base.Snapshot, base.Log
	c.NATS.StoreDir = filepath.Join(t.TempDir(), "js")
	return c
}

// startSec runs a daemon until the test ends; it fails the test if the
// daemon does not start.
func startSec(t *testing.T, cfg config.Config) *daemon.Daemon {
	t.Helper()
	d, _, _ := launchSec(t, cfg)
	return d
}

// launchSec starts a daemon logging at debug level into logs and waits
// until it serves; stop (also run when the test ends) stops it and
// returns Run's error.
func launchSec(t *testing.T, cfg config.Config) (d *daemon.Daemon, logs *logBuffer, stop func() error) {
	t.Helper()
	logs = &logBuffer{}
	d, err := daemon.New(cfg, zerolog.New(logs).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(20 * time.Second):
				runErr = errors.New("daemon did not stop in 20s")
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-d.Started():
	case err := <-done:
		runErr = err
		once.Do(cancel)
		t.Fatalf("daemon stopped before serving: %v\nlogs:\n%s", err, logs)
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not start in 10s")
	}
	return d, logs, stop
}

// secBin publishes one bin of secModel through js and waits for its
// filtered estimate on nc.
func secBin(t *testing.T, nc *nats.Conn, js jetstream.JetStream, hour int) {
	t.Helper()
	col := collect(t, nc, "dcgp.latent."+secModel)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	three, five := 3.0, 5.0
	start := origin.Add(time.Duration(hour) * time.Hour)
	msg, _ := json.Marshal(wire.ObsMessage{Schema: wire.SchemaVersion, Model: secModel, BinStart: &start,
		Observations: []wire.Observation{{Product: "a", Demand: &three}, {Product: "b", Demand: &five, Supply: &five}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "dcgp.obs."+secModel, msg); err != nil {
		t.Fatalf("publishing a bin: %v", err)
	}
	col.wait(t, "the bin's filtered estimate", 10*time.Second, func(ms []wire.LatentMessage) bool {
		for _, m := range ms {
			if m.Kind == wire.KindFiltered && m.BinStart.Equal(start) {
				return true
			}
		}
		return false
	})
}

// TestSecurityEmbeddedTLS: with [nats.server_tls] the embedded server
// takes TLS only: a client that sends its token in clear is cut off
// before it is read, a client without the CA or with another CA cannot
// connect, one with the CA can, and the daemon's own connection (which
// pins the server's certificate) consumes and publishes. Off loopback a
// token without TLS is refused before anything starts.
func TestSecurityEmbeddedTLS(t *testing.T) {
	dir := t.TempDir()
	ca := natstest.NewPKI(t, dir, "dcgp")
	rogue := natstest.NewPKI(t, dir, "rogue")
	cert, key, keyPEM := ca.Issue(t, "nats-server", x509.ExtKeyUsageServerAuth)
	token := secret(t, "tok-")
	tables := "[nats]\nlisten = \"127.0.0.1:-1\"\ntoken = \"" + token + "\"\n[nats.server_tls]\ncert_file = \"" + cert + "\"\nkey_file = \"" + key + "\"\n"
	d := startSec(t, secTOML(t, tables))
	url := d.NATSURL()
	if !strings.HasPrefix(url, "tls://127.0.0.1:") {
		t.Fatalf("NATSURL %q: want tls://127.0.0.1:port", url)
	}
	addr := strings.TrimPrefix(url, "tls://")

	t.Run("token in clear is not taken", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		r := bufio.NewReader(conn)
		info, err := r.ReadString('\n')
		if err != nil || !strings.Contains(info, `"tls_required":true`) {
			t.Fatalf("INFO %q, %v: want tls_required", info, err)
		}
		if _, err := conn.Write([]byte(`CONNECT {"auth_token":"` + token + `","verbose":false}` + "\r\nPING\r\n")); err != nil {
			t.Fatal(err)
		}
		rest, _ := r.ReadString('\n')
		if strings.Contains(rest, "PONG") {
			t.Fatalf("a plaintext CONNECT was answered %q", rest)
		}
	})
	for _, tc := range []struct {
		name, ca string
		want     string
	}{
		{"no CA: the system roots", "", "x509"},
		{"another CA", rogue.CAFile, "x509"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []nats.Option{nats.Token(token), nats.MaxReconnects(0)}
			if tc.ca != "" {
				opts = append(opts, nats.RootCAs(tc.ca))
			}
			nc, err := nats.Connect(url, opts...)
			if err == nil {
				nc.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
			noSecrets(t, "the error", err.Error(), []string{token, keyPEM})
		})
	}
	t.Run("the CA", func(t *testing.T) {
		nc, err := nats.Connect(url, nats.Token(token), nats.RootCAs(ca.CAFile))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if !nc.TLSRequired() {
			t.Error("the connection is not TLS")
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		secBin(t, nc, js, 1)
	})
	t.Run("off loopback without TLS", func(t *testing.T) {
		cfg := secTOML(t, "[nats]\nlisten = \"127.0.0.1:-1\"\ntoken = \""+token+"\"\n")
		cfg.NATS.Listen = "0.0.0.0:4222"
		_, err := daemon.New(cfg, zerolog.Nop())
		if err == nil || !strings.Contains(err.Error(), "off loopback without TLS") || !strings.Contains(err.Error(), "nats.server_tls.cert_file") {
			t.Fatalf("daemon.New: %v, want a refusal naming nats.server_tls.cert_file", err)
		}
		noSecrets(t, "the error", err.Error(), []string{token})
	})
}

// TestSecurityEmbeddedMutualTLS: with [nats.server_tls] verify the
// embedded server takes only clients with a certificate from ca_file:
// the daemon (presenting nats.tls_cert) runs, a client with a
// certificate from that CA publishes a bin the daemon estimates, and one
// without a certificate or with one from another CA is refused.
func TestSecurityEmbeddedMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := natstest.NewPKI(t, dir, "dcgp")
	rogue := natstest.NewPKI(t, dir, "rogue")
	cert, key, _ := ca.Issue(t, "nats-server", x509.ExtKeyUsageServerAuth)
	dcert, dkey, _ := ca.Issue(t, "dcgpd", x509.ExtKeyUsageClientAuth)
	ccert, ckey, _ := ca.Issue(t, "client", x509.ExtKeyUsageClientAuth)
	rcert, rkey, _ := rogue.Issue(t, "rogue-client", x509.ExtKeyUsageClientAuth)
	tables := "[nats]\nlisten = \"127.0.0.1:-1\"\ntls_cert = \"" + dcert + "\"\ntls_key = \"" + dkey + "\"\n" +
		"[nats.server_tls]\ncert_file = \"" + cert + "\"\nkey_file = \"" + key + "\"\nca_file = \"" + ca.CAFile + "\"\nverify = true\n"
	d := startSec(t, secTOML(t, tables))
	url := d.NATSURL()
	for _, tc := range []struct{ name, cert, key string }{{"no certificate", "", ""}, {"another CA's certificate", rcert, rkey}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []nats.Option{nats.RootCAs(ca.CAFile), nats.MaxReconnects(0)}
			if tc.cert != "" {
				opts = append(opts, nats.ClientCert(tc.cert, tc.key))
			}
			nc, err := nats.Connect(url, opts...)
			if err == nil {
				// With TLS 1.3 the server's refusal may come after the
				// handshake: the first round trip fails then.
				err = nc.Flush()
				nc.Close()
			}
			if err == nil {
				t.Fatal("connected")
			}
		})
	}
	t.Run("a certificate from ca_file", func(t *testing.T) {
		nc, js := natstest.Client(t, url, nats.RootCAs(ca.CAFile), nats.ClientCert(ccert, ckey))
		secBin(t, nc, js, 1)
	})
}

// permErrors records the permission violations the server reports to a
// connection.
type permErrors struct {
	mu   sync.Mutex
	errs []string
}

func (p *permErrors) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, err.Error())
}

// wait returns once a violation naming subject arrives, failing after 3 s.
func (p *permErrors) wait(t *testing.T, op, subject string) {
	t.Helper()
	want := `Permissions Violation for ` + op + ` to "` + subject + `"`
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for _, e := range p.errs {
			if strings.Contains(e, want) {
				p.mu.Unlock()
				return
			}
		}
		p.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Errorf("no %q; the server reported %q", want, p.errs)
}

// TestSecurityRoles: the embedded server's [[nats.users]] get their
// role's permissions. A reader (bcrypt password) cannot delete or purge
// the input stream nor publish input, by core NATS or JetStream — each
// refused by the server with a permissions violation — and can read the
// estimates (subject, stream and key-value bucket) and query the dcgpd
// service. A publisher (nkey) publishes input that the daemon estimates
// but cannot delete the stream nor read the estimates. The daemon's own
// connection, an admin, keeps working throughout, and the input stream
// still holds every stored bin at the end.
func TestSecurityRoles(t *testing.T) {
	dir := t.TempDir()
	ca := natstest.NewPKI(t, dir, "dcgp")
	cert, key, _ := ca.Issue(t, "nats-server", x509.ExtKeyUsageServerAuth)
	readerPass := secret(t, "reader-pw-")
	hash, err := bcrypt.GenerateFromPassword([]byte(readerPass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	seed, pub := userSeed(t)
	seedFile := writeFile(t, dir, "publisher.nk", seed)
	tables := "[nats]\nlisten = \"127.0.0.1:-1\"\nuser = \"dcgpd\"\npassword = \"" + secret(t, "admin-") + "\"\n" +
		"[nats.server_tls]\ncert_file = \"" + cert + "\"\nkey_file = \"" + key + "\"\n" +
		"[[nats.users]]\nname = \"dashboard\"\nrole = \"reader\"\npassword_hash = '" + string(hash) + "'\n" +
		"[[nats.users]]\nname = \"feed\"\nrole = \"publisher\"\nnkey = \"" + pub + "\"\n"
	d := startSec(t, secTOML(t, tables))
	url := d.NATSURL()

	connect := func(t *testing.T, auth nats.Option, perm *permErrors) (*nats.Conn, jetstream.JetStream) {
		return natstest.Client(t, url, auth, nats.RootCAs(ca.CAFile), nats.ErrorHandler(perm.handler))
	}
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Second)
	}
	rperm, pperm := &permErrors{}, &permErrors{}
	nkey, err := nats.NkeyOptionFromSeed(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	rnc, rjs := connect(t, nats.UserInfo("dashboard", readerPass), rperm)
	pnc, pjs := connect(t, nkey, pperm)

	t.Run("publisher publishes input", func(t *testing.T) {
		// The reader's subscription sees the estimate of the publisher's bin.
		secBin(t, rnc, pjs, 1)
	})
	t.Run("reader reads", func(t *testing.T) {
		ctx, cancel := short()
		defer cancel()
		kv, err := rjs.KeyValue(ctx, natsio.LatestBucket)
		if err != nil {
			t.Fatalf("binding %s: %v", natsio.LatestBucket, err)
		}
		e, err := kv.Get(ctx, secModel)
		if err != nil {
			t.Fatalf("latest estimate: %v", err)
		}
		var m wire.LatentMessage
		if err := json.Unmarshal(e.Value(), &m); err != nil || m.Model != secModel || len(m.Estimates) != 2 {
			t.Fatalf("latest estimate %s: %v", e.Value(), err)
		}
		// The output stream, from its start, as `dcgpd watch --history`.
		cons, err := rjs.OrderedConsumer(ctx, natsio.LatentStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"dcgp.latent." + secModel}})
		if err != nil {
			t.Fatalf("ordered consumer on %s: %v", natsio.LatentStream, err)
		}
		if msg, err := cons.Next(jetstream.FetchMaxWait(time.Second)); err != nil {
			t.Fatalf("reading %s: %v", natsio.LatentStream, err)
		} else if !strings.Contains(string(msg.Data()), `"model":"`+secModel+`"`) {
			t.Fatalf("reading %s: %s", natsio.LatentStream, msg.Data())
		}
		req, _ := json.Marshal(query.Query{Model: secModel})
		reply, err := rnc.Request(query.EstimateSubject, req, 2*time.Second)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		var est query.EstimateReply
		if err := json.Unmarshal(reply.Data, &est); err != nil || est.Model != secModel || len(est.Estimates) != 2 {
			t.Fatalf("query reply %s: %v", reply.Data, err)
		}
	})
	t.Run("reader cannot delete, purge or publish input", func(t *testing.T) {
		ctx, cancel := short()
		defer cancel()
		if err := rjs.DeleteStream(ctx, natsio.ObsStream); err == nil {
			t.Error("the reader deleted the input stream")
		}
		rperm.wait(t, "Publish", "$JS.API.STREAM.DELETE."+natsio.ObsStream)
		// The request the nats CLI's `stream purge` sends.
		if m, err := rnc.Request("$JS.API.STREAM.PURGE."+natsio.ObsStream, nil, time.Second); err == nil {
			t.Errorf("the reader's purge was answered: %s", m.Data)
		}
		rperm.wait(t, "Publish", "$JS.API.STREAM.PURGE."+natsio.ObsStream)
		ctx, cancel = short()
		defer cancel()
		if _, err := rjs.Publish(ctx, "dcgp.obs."+secModel, []byte(`{}`)); err == nil {
			t.Error("the reader's input was stored")
		}
		rperm.wait(t, "Publish", "dcgp.obs."+secModel)
	})
	t.Run("publisher cannot delete or read estimates", func(t *testing.T) {
		ctx, cancel := short()
		defer cancel()
		if err := pjs.DeleteStream(ctx, natsio.ObsStream); err == nil {
			t.Error("the publisher deleted the input stream")
		}
		pperm.wait(t, "Publish", "$JS.API.STREAM.DELETE."+natsio.ObsStream)
		if _, err := pnc.Subscribe("dcgp.latent.>", func(*nats.Msg) {}); err == nil {
			_ = pnc.Flush()
		}
		pperm.wait(t, "Subscription", "dcgp.latent.>")
	})
	t.Run("the daemon still runs and the input is whole", func(t *testing.T) {
		// Another bin from the publisher, estimated by the daemon's own
		// (admin) connection after all the refusals.
		secBin(t, rnc, pjs, 2)
		ctx, cancel := short()
		defer cancel()
		s, err := pjs.Stream(ctx, natsio.ObsStream)
		if err != nil {
			t.Fatalf("input stream after the attempts: %v", err)
		}
		if n := s.CachedInfo().State.Msgs; n != 2 {
			t.Errorf("the input stream holds %d messages, want the publisher's 2", n)
		}
	})
}
