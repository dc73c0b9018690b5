package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// TestGBFSCommand runs `dcgpd gbfs` against a local GBFS 2.3 server
// (timestamps of now) and an embedded NATS whose stream stores the status
// subject, with the URL given by NATS_URL; it stops on cancellation.
func TestGBFSCommand(t *testing.T) {
	st := adapterStream(t, "STATUS", "dcgp.status.>")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := newGBFSServer(t)
	runCtx, stop := context.WithCancel(ctx)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"gbfs", "--url", srv.URL + "/gbfs.json", "--feed", "city", "--log-format", "json"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := st.Info(ctx)
		if err == nil && info.State.Msgs == 1 {
			break
		}
		if time.Now().After(deadline) {
			stop()
			<-done
			t.Fatalf("no status message stored within 20 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	raw, err := st.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := stationstatus.Decode(raw.Data)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Subject != "dcgp.status.city" || len(m.Stations) != 1 || m.Stations[0].BikesAvailable != 4 || *m.Stations[0].Capacity != 10 {
		t.Fatalf("stored %s: %+v", raw.Subject, m)
	}
	if !strings.Contains(stdout.String(), "publishing to dcgp.status.city") {
		t.Fatalf("stdout %q", stdout.String())
	}
}

func TestGBFSCommandUsage(t *testing.T) {
	for _, args := range [][]string{{"gbfs"}, {"gbfs", "--url", "http://x/gbfs.json"}, {"gbfs", "--url", "gbfs.json", "--feed", "x"}} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out, &out); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}

// newGBFSServer serves a GBFS 2.3 system of one station, stamped now.
func newGBFSServer(t *testing.T) *httptest.Server {
	t.Helper()
	now := time.Now().Unix()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gbfs.json":
			fmt.Fprintf(w, `{"last_updated": %d, "ttl": 60, "version": "2.3", "data": {"en": {"feeds": [
				{"name": "station_information", "url": "%s/si.json"}, {"name": "station_status", "url": "%s/ss.json"}]}}}`, now, srv.URL, srv.URL)
		case "/si.json":
			fmt.Fprintf(w, `{"last_updated": %d, "ttl": 3600, "version": "2.3", "data": {"stations": [
				{"station_id": "a", "name": "A", "lat": 40.7, "lon": -74.0, "capacity": 10}]}}`, now)
		case "/ss.json":
			fmt.Fprintf(w, `{"last_updated": %d, "ttl": 60, "version": "2.3", "data": {"stations": [
				{"station_id": "a", "num_bikes_available": 4, "num_docks_available": 6, "is_installed": true,
				 "is_renting": true, "is_returning": true, "last_reported": %d}]}}`, now, now-5)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestGBFSCommandBeforeServe: started before the daemon (NATS up, no
// stream stores the status subject), `dcgpd gbfs` says the daemon is
// missing, not the feed, and stores the pending snapshot once the stream
// exists.
func TestGBFSCommandBeforeServe(t *testing.T) {
	emb, err := natsio.StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	t.Setenv("NATS_URL", emb.ClientURL())
	srv := newGBFSServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"gbfs", "--url", srv.URL + "/gbfs.json", "--feed", "city", "--log-format", "json",
			"--min-interval", "100ms", "--max-interval", "200ms", "--refresh", "1s"}, &stdout, &stderr)
	}()
	waitFor(t, "the warning naming dcgpd serve", 20*time.Second, func() bool {
		return strings.Contains(stderr.String(), "no JetStream stream stores subject dcgp.status.city: is dcgpd serve running?")
	}, &stderr)
	if strings.Contains(stderr.String(), "gbfs feed unusable") {
		t.Fatalf("the feed blamed for the missing stream:\n%s", stderr.String())
	}
	nc, err := nats.Connect(emb.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "STATUS", Subjects: []string{"dcgp.status.>"}, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pending snapshot stored", 20*time.Second, func() bool {
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs == 1
	}, &stderr)
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "gbfs status stored again") {
		t.Errorf("no line when the status was stored:\n%s", stderr.String())
	}
}

// waitFor polls cond until it holds or the deadline passes (then fails
// the test with log's contents).
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool, log *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; stderr:\n%s", what, within, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestGBFSCommandMetricsPortBusy: a --metrics address that cannot be
// bound fails the command at start, naming the address, before it polls.
func TestGBFSCommandMetricsPortBusy(t *testing.T) {
	st := adapterStream(t, "STATUS", "dcgp.status.>")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	srv := newGBFSServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var stdout, stderr syncBuffer
	code := run(ctx, []string{"gbfs", "--url", srv.URL + "/gbfs.json", "--feed", "city", "--metrics", addr}, &stdout, &stderr)
	if ctx.Err() != nil || code != 1 {
		t.Fatalf("exit %d (context %v), want 1 at start; stderr:\n%s", code, ctx.Err(), stderr.String())
	}
	if !strings.Contains(stderr.String(), addr) {
		t.Errorf("the error does not name %s:\n%s", addr, stderr.String())
	}
	if info, err := st.Info(context.Background()); err != nil || info.State.Msgs != 0 {
		t.Errorf("stream holds %d messages, want none: the command must fail before it polls", info.State.Msgs)
	}
}
