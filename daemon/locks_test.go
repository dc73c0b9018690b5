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
	"github.com/dcgpd/dcgpd/internal/dirlock"
)

// embeddedConfig is a one-model daemon on an embedded server with its
// JetStream store and snapshots in the given folders.
func embeddedConfig(t *testing.T, store, snaps string) config.Config {
	t.Helper()
	text := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:-1\"\nstore_dir = %q\n[http]\nlisten = \"off\"\n[snapshot]\ndir = %q\n"+
		"[[models]]\nname = \"m\"\nbin = \"1h\"\n[[models.product]]\nname = \"a\"\nfeatures = [0.0, 0.0]\n", store, snaps)
	cfg, err := config.DecodeConfig([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSecondInstanceRefusedByDirectoryLocks: a second daemon given the
// first one's JetStream store or snapshot folder refuses to start, naming
// the folder and the holder's pid, instead of sharing the store and
// overwriting the snapshots; once the first stops, it starts.
func TestSecondInstanceRefusedByDirectoryLocks(t *testing.T) {
	base := t.TempDir()
	store, snaps := filepath.Join(base, "jetstream"), filepath.Join(base, "snapshots")
	first, err := New(embeddedConfig(t, store, snaps), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	select {
	case <-first.Started():
	case err := <-done:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("first daemon did not start in 30 s")
	}
	pid := "held by pid " + strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name, store, snaps, what string
	}{
		{"same store", store, filepath.Join(base, "other-snapshots"), "nats.store_dir " + store},
		{"same snapshots", filepath.Join(base, "other-jetstream"), snaps, "snapshot.dir " + snaps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			second, err := New(embeddedConfig(t, tc.store, tc.snaps), zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer rcancel()
			err = second.Run(rctx)
			if !errors.Is(err, dirlock.ErrLocked) || !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), pid) {
				t.Fatalf("second daemon: %v; want a refusal naming %s and %s", err, tc.what, pid)
			}
		})
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	again, err := New(embeddedConfig(t, store, snaps), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithCancel(context.Background())
	go func() { done <- again.Run(actx) }()
	select {
	case <-again.Started():
	case err := <-done:
		t.Fatalf("after the first stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not start in 30 s after the first stopped")
	}
	acancel()
	<-done
}
