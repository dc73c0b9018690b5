package test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/daemon"
	"github.com/dcgpd/dcgpd/stream/natsio"
)

// TestNATSServerRestart stops the NATS server in the middle of a replay
// and starts it again on the same store: the daemon reconnects, the
// outputs it could not store meanwhile are sent again, and the output
// stream ends up holding every bin's estimate with exactly the content of
// a run without the outage.
func TestNATSServerRestart(t *testing.T) {
	c := simulated(t, 5, 7)
	ref := outageRun(t, c, false)
	got := outageRun(t, c, true)
	if len(ref) < len(c.bins) {
		t.Fatalf("the run without outage stored %d outputs for %d bins", len(ref), len(c.bins))
	}
	for id, want := range ref {
		g, ok := got[id]
		if !ok {
			t.Fatalf("%s lost in the outage", id)
		}
		if !bytes.Equal(g, want) {
			t.Fatalf("%s differs after the outage:\n got %s\nwant %s", id, g, want)
		}
	}
	if len(got) != len(ref) {
		t.Fatalf("%d outputs stored after the outage, %d without", len(got), len(ref))
	}
	t.Logf("%d outputs stored, identical with and without a server restart mid-replay", len(got))
}

// outageRun replays c through an in-process daemon connected to a NATS
// server on a fixed port (restarted half-way if outage) and returns the
// output stream's messages by id.
func outageRun(t *testing.T, c *cluster, outage bool) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	store := filepath.Join(dir, "js")
	emb, err := natsio.StartEmbedded(addr, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { emb.Shutdown() }()
	cfg := daemonConfig(t, c, 1)
	cfg.NATS.URL = "nats://" + addr
	cfg.HTTP.Listen = "off"
	d, err := daemon.New(cfg, zerolog.New(os.Stderr).Level(zerolog.ErrorLevel))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-d.Started():
	case err := <-done:
		t.Fatal(err)
	}
	half := len(c.bins) / 2
	publish := func(bins []natsio.ReplayBin, watermark bool) {
		nc, err := nats.Connect("nats://"+addr, nats.MaxReconnects(-1))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		rctx, rcancel := context.WithTimeout(ctx, time.Minute)
		defer rcancel()
		if _, err := natsio.Replay(rctx, js, "cluster0", bins, natsio.ReplayOptions{Width: time.Hour, Watermark: watermark}); err != nil {
			t.Fatal(err)
		}
	}
	publish(c.bins[:half], false)
	if outage {
		// Let the daemon get part-way, then take the server away under it.
		time.Sleep(50 * time.Millisecond)
		emb.Shutdown()
		time.Sleep(time.Second)
		if emb, err = natsio.StartEmbedded(addr, store, zerolog.Nop()); err != nil {
			t.Fatal(err)
		}
	}
	publish(c.bins[half:], true)
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out := readOutputs(t, js)
		if hasFiltered(out, "cluster0", c.bins[len(c.bins)-1].Start) {
			// Give in-flight re-smooth revisions a moment, then read again.
			time.Sleep(2 * time.Second)
			return readOutputs(t, js)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last bin's estimate was not stored within 2 minutes (%d outputs)", len(out))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readOutputs reads the whole output stream, by message id.
func readOutputs(t *testing.T, js jetstream.JetStream) map[string][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "DCGP_LATENT")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	if info.State.Msgs == 0 {
		return out
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for n := uint64(0); n < info.State.Msgs; n++ {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("reading the output stream: %v", err)
		}
		out[m.Headers().Get(jetstream.MsgIDHeader)] = m.Data()
	}
	return out
}
