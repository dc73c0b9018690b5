package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// TestClientCommandTLS: a client command reaches a server that takes
// TLS only, with a private CA, through the nats CLI's environment: with
// $NATS_CA it publishes (replay: two bins and a watermark), without it the error names the
// certificate problem and not the token; $NATS_URL gives the server.
func TestClientCommandTLS(t *testing.T) {
	dir := t.TempDir()
	ca := natstest.NewPKI(t, dir, "dcgp")
	cert, key, _ := ca.Issue(t, "nats-server", x509.ExtKeyUsageServerAuth)
	token := "tok-client-command-secret"
	conf, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, "js"),
		NoSigs: true, NoLog: true, Authorization: token, TLS: true, TLSConfig: conf, TLSTimeout: 5})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready in 10s")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	admin, err := nats.Connect(srv.ClientURL(), nats.Token(token), nats.RootCAs(ca.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := natsio.SetupStreams(ctx, js, &config.NATSConfig{Prefix: "dcgp", Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	obs := filepath.Join(dir, "obs.csv")
	if err := os.WriteFile(obs, []byte("time,product,demand,supply\n0,a,3,5\n1,a,2,5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(srv.ClientURL(), "tls://", "tls://"+token+"@", 1)
	args := []string{"--obs", obs, "--model", "m"}

	t.Setenv("NATS_URL", url)
	t.Setenv("NATS_CA", ca.CAFile)
	var out, errb bytes.Buffer
	if err := runReplay(ctx, args, &out, &errb); err != nil {
		t.Fatalf("replay with $NATS_CA: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), ": 3 stored") {
		t.Errorf("replay: %q", out.String())
	}

	t.Setenv("NATS_CA", "")
	err = runReplay(ctx, args, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "x509") {
		t.Fatalf("replay without the CA: %v, want an x509 error", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("the error shows the token: %v", err)
	}
}
