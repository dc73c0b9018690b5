package test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEV5minServe runs examples/ev-5min through `dcgpd serve` and
// `dcgpd replay`: the example's dcgpd.toml (5-minute bins, a daily
// re-smooth of 576 bins) on free ports, its first three days (864 bins)
// replayed, and every bin processed with its re-smooths swapped in, no
// observation refused and a clean stop on SIGINT.
func TestEV5minServe(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: runs a daemon")
	}
	dir := t.TempDir()
	for _, f := range []string{"model.toml", "products.csv"} {
		copyFile(t, filepath.Join("..", "examples", "ev-5min", f), filepath.Join(dir, f))
	}
	cfg, err := os.ReadFile(filepath.Join("..", "examples", "ev-5min", "dcgpd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	natsPort, httpPort := freePort(t), freePort(t)
	extra := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = %q\n\n[http]\nlisten = \"127.0.0.1:%d\"\n\n[snapshot]\ndir = %q\n\n",
		natsPort, filepath.Join(dir, "js"), httpPort, filepath.Join(dir, "snap"))
	if err := os.WriteFile(filepath.Join(dir, "dcgpd.toml"), append([]byte(extra), cfg...), 0o644); err != nil {
		t.Fatal(err)
	}
	// The first three days of the example's observations.
	in, err := os.Open(filepath.Join("..", "examples", "ev-5min", "obs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var obs strings.Builder
	sc := bufio.NewScanner(in)
	for n := 0; sc.Scan() && n <= 3*288*3; n++ {
		obs.WriteString(sc.Text() + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "obs.csv"), []byte(obs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := exec.Command(dcgpdPath, "serve", "--config", filepath.Join(dir, "dcgpd.toml"), "--log-format", "json")
	serve.Dir = dir
	errb := &syncBuffer{}
	serve.Stderr = errb
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = serve.Process.Kill()
			_ = serve.Wait()
		}
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	waitReady(t, base+"/readyz", errb)
	if code, _, stderr := runCLI(t, "replay", "--obs", filepath.Join(dir, "obs.csv"), "--model", "ev", "--bin", "5m", "--speed", "0",
		"--nats", fmt.Sprintf("nats://127.0.0.1:%d", natsPort)); code != 0 {
		t.Fatalf("replay: %s", stderr)
	}
	metric := func(name string) string {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
				return l
			}
		}
		return ""
	}
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.HasSuffix(metric(`dcgpd_bins_processed_total{model="ev"}`), " 864") {
		if time.Now().After(deadline) {
			t.Fatalf("not every bin processed within 3 minutes: %q\n%s", metric(`dcgpd_bins_processed_total{model="ev"}`), errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := metric(`dcgpd_resmooth_total{model="ev",outcome="swapped"}`); m == "" {
		t.Errorf("no re-smooth swapped in over three days of 5-minute bins\n%s", errb.String())
	}
	if m := metric(`dcgpd_observations_rejected_total`); m != "" {
		t.Errorf("observations refused: %s", m)
	}
	t.Logf("%s; %s", metric(`dcgpd_bins_processed_total{model="ev"}`), metric(`dcgpd_resmooth_total{model="ev",outcome="swapped"}`))
	_ = serve.Process.Signal(syscall.SIGINT)
	stopped = true
	if err := serve.Wait(); err != nil {
		t.Fatalf("serve did not stop cleanly: %v\n%s", err, errb.String())
	}
}

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
