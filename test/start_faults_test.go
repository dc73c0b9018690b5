package test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestUnknownModelRejected: input for a model the daemon does not run is
// counted, logged and rejected on <prefix>.rejected.<model>; the
// configured model's input keeps flowing.
func TestUnknownModelRejected(t *testing.T) {
	t.Parallel()
	d, obs := rtDaemon(t)
	nc, err := nats.Connect(d.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rejected, err := nc.SubscribeSync("dcgp.rejected.ghost")
	if err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "replay", "--obs", obs, "--model", "ghost", "--nats", d.NATSURL()); code != 0 {
		t.Fatalf("replay for ghost: exit %d, %q %q", code, stdout, stderr)
	}
	msg, err := rejected.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no rejection on dcgp.rejected.ghost: %v", err)
	}
	var rm wire.RejectionMessage
	if err := json.Unmarshal(msg.Data, &rm); err != nil || rm.Model != "ghost" || rm.Reason != wire.ReasonModel || !strings.Contains(rm.Detail, "rt") {
		t.Fatalf("rejection %s (%v): want model ghost, reason %s, the configured models in the detail", msg.Data, err, wire.ReasonModel)
	}
	resp, err := http.Get("http://" + d.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `dcgpd_observations_rejected_total{model="ghost",reason="` + wire.ReasonModel + `"} 5`
	if !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %s", want)
	}
	if code, stdout, stderr := runCLI(t, "replay", "--obs", obs, "--model", "rt", "--nats", d.NATSURL()); code != 0 {
		t.Fatalf("replay for rt: exit %d, %q %q", code, stdout, stderr)
	}
	deadline := time.Now().Add(30 * time.Second)
	for d.Runner("rt").View().Status.Bins != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("rt processed %d bins, want 4", d.Runner("rt").View().Status.Bins)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeBusyNATSPort: `dcgpd serve` whose embedded server's port is
// taken fails at once with an error naming the port, as an HTTP clash
// does, instead of waiting for a server that never becomes ready.
func TestServeBusyNATSPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dcgpd.toml")
	conf := `[nats]
listen = "` + addr + `"
store_dir = "` + filepath.Join(dir, "js") + `"
[http]
listen = "off"
[snapshot]
dir = "off"
[[models]]
name = "m"
bin = "1h"
[[models.product]]
name = "a"
features = [0, 0]
`
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dcgpdPath, "serve", "--config", cfg)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("serve on a busy NATS port exited 0")
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("serve on a busy NATS port still running after 20s:\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), addr) || !strings.Contains(errb.String(), "in use") {
		t.Fatalf("the error does not name the busy port %s:\n%s", addr, errb.String())
	}
}
