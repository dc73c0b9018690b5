package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// sharedServerConfig is a one-model daemon without [cluster] on the
// server at url, its snapshots in snaps.
func sharedServerConfig(t *testing.T, url, snaps string) config.Config {
	t.Helper()
	text := fmt.Sprintf("[nats]\nurl = %q\n[http]\nlisten = \"off\"\n[snapshot]\ndir = %q\n"+
		"[[models]]\nname = \"m\"\nbin = \"1h\"\n[[models.product]]\nname = \"a\"\nfeatures = [0.0, 0.0]\n", url, snaps)
	cfg, err := config.DecodeConfig([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runUntilStarted runs d until the returned stop is called, failing the
// test if it does not start.
func runUntilStarted(t *testing.T, d *Daemon) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	select {
	case <-d.Started():
	case err := <-done:
		cancel()
		t.Fatalf("daemon stopped: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("daemon did not start in 30 s")
	}
	return func() error {
		cancel()
		return <-done
	}
}

// TestSecondInstanceOnSameModelRefused: without [cluster], a second
// instance on the same server and models refuses to start, naming the
// model and the first instance's pid, instead of taking the model's
// consumer and leaving the first one, still "ready", processing nothing;
// after the first one's connection is gone (as when it is killed), a new
// instance takes the model over at once.
func TestSecondInstanceOnSameModelRefused(t *testing.T) {
	emb, _ := natstest.Embedded(t)
	base := t.TempDir()
	first, err := New(sharedServerConfig(t, emb.ClientURL(), filepath.Join(base, "a")), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	stopFirst := runUntilStarted(t, first)
	second, err := New(sharedServerConfig(t, emb.ClientURL(), filepath.Join(base, "b")), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = second.Run(ctx)
	if !errors.Is(err, ErrModelConsumed) || !strings.Contains(err.Error(), "model m") ||
		!strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second instance: %v; want ErrModelConsumed naming model m and pid %d", err, os.Getpid())
	}
	if !first.ready.Load() {
		t.Fatal("the first instance is no longer ready")
	}
	// The first instance's connection goes, as when it is killed.
	first.nc.Close()
	third, err := New(sharedServerConfig(t, emb.ClientURL(), filepath.Join(base, "c")), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	stopThird := runUntilStarted(t, third)
	if err := stopThird(); err != nil {
		t.Fatal(err)
	}
	_ = stopFirst()
}
