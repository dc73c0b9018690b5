package test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/daemon"
)

// rtDaemon starts a daemon in process on an embedded server with one
// two-product model "rt" (origin the Unix epoch, replay's default) and
// returns it with an observations CSV of four hourly bins (5 messages
// with the watermark): a censored hour, an unobserved demand, and a last
// bin without product b that only the watermark closes.
func rtDaemon(t *testing.T) (*daemon.Daemon, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := config.DefaultConfig()
	cfg.NATS.Listen = "127.0.0.1:-1"
	cfg.NATS.StoreDir = filepath.Join(dir, "js")
	cfg.Snapshot.Dir = filepath.Join(dir, "snapshots")
	cfg.HTTP.Listen = "127.0.0.1:0"
	m := config.DefaultModelConfig()
	m.Name, m.Bin, m.Horizon = "rt", config.Duration{Duration: time.Hour}, 2
	m.Origin = time.Unix(0, 0).UTC()
	m.Product = []config.ProductConfig{{Name: "a", Features: []float64{0, 0}}, {Name: "b", Features: []float64{300, 0}}}
	m.Model.Likelihood = "diffusion"
	m.Model.Diffusion.Lengthscale, m.Model.Diffusion.Sink = 250, 0.2
	m.Resmooth.EveryBins = 0
	cfg.Models = []config.ModelConfig{m}
	d, err := daemon.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-d.Started():
	case err := <-runErr:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not start")
	}
	obs := filepath.Join(dir, "obs.csv")
	csvText := "time,product,demand,supply,censored\n" +
		"2024-05-01T00:00:00Z,a,3,5,0\n2024-05-01T00:00:00Z,b,4,4,1\n" +
		"2024-05-01T01:00:00Z,a,2,6,0\n2024-05-01T01:00:00Z,b,,6,0\n" +
		"2024-05-01T02:00:00Z,a,5,5,1\n2024-05-01T02:00:00Z,b,1,9,0\n" +
		"2024-05-01T03:00:00Z,a,4,8,0\n"
	if err := os.WriteFile(obs, []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	return d, obs
}

// TestReplayReportsAcks: `replay` reads its publish acknowledgements. The
// first replay reports every message stored; a second one inside the
// stream's duplicate window reports every message a duplicate the stream
// dropped, not "published"; a replay to a subject no stream captures
// fails, naming the subject.
func TestReplayReportsAcks(t *testing.T) {
	t.Parallel()
	d, obs := rtDaemon(t)
	url := d.NATSURL()
	code, stdout, stderr := runCLI(t, "replay", "--obs", obs, "--model", "rt", "--nats", url)
	if code != 0 || !strings.Contains(stdout, "5 messages (4 bins, 6 observations)") || !strings.Contains(stdout, "5 stored, 0 duplicates") {
		t.Fatalf("first replay: exit %d, %q %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "replay", "--obs", obs, "--model", "rt", "--nats", url)
	if code != 0 || !strings.Contains(stdout, "0 stored, 5 duplicates") || !strings.Contains(stderr, "nothing new was stored") {
		t.Fatalf("second replay: exit %d, %q %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "replay", "--obs", obs, "--model", "rt", "--nats", url, "--prefix", "nostream")
	t.Logf("replay to a subject no stream captures: exit %d: %s", code, strings.TrimSpace(stderr))
	if code == 0 || !strings.Contains(stderr, "nostream.obs.rt") || !strings.Contains(stderr, "not stored") {
		t.Fatalf("replay to a subject no stream captures: exit %d, %q %q", code, stdout, stderr)
	}
}

// TestClientsHonourNATSURL: with NATS_URL set (the NATS tools'
// convention) and no --nats, `replay` and `watch` connect there.
func TestClientsHonourNATSURL(t *testing.T) {
	t.Parallel()
	d, obs := rtDaemon(t)
	env := append(os.Environ(), "NATS_URL="+d.NATSURL())
	watch := exec.Command(dcgpdPath, "watch", "--model", "rt", "--kind", "filtered", "--count", "1")
	watch.Env = env
	werr, err := watch.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()
	if line, err := bufio.NewReader(werr).ReadString('\n'); err != nil || !strings.HasPrefix(line, "watching dcgp.latent.rt") {
		t.Fatalf("watch with NATS_URL did not start: %q %v", line, err)
	}
	replay := exec.Command(dcgpdPath, "replay", "--obs", obs, "--model", "rt")
	replay.Env = env
	out, err := replay.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "5 stored") {
		t.Fatalf("replay with NATS_URL: %v\n%s", err, out)
	}
	help := exec.Command(dcgpdPath, "replay", "-h")
	out, _ = help.CombinedOutput()
	if !strings.Contains(string(out), "NATS_URL") {
		t.Errorf("replay -h does not mention NATS_URL:\n%s", out)
	}
}
