package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// killAt is one kill -9 of the daemon: after a delay from its start, or
// at the n-th log line with a message (counted from its start).
type killAt struct {
	delay time.Duration
	onLog string
	n     int
}

func (k killAt) String() string {
	if k.onLog != "" {
		return fmt.Sprintf("at %q #%d", k.onLog, k.n)
	}
	return fmt.Sprintf("after %v", k.delay)
}

// outputs are the messages a daemon published, by Nats-Msg-Id, every
// copy in arrival order (a re-publication after a restart is a copy).
type outputs struct {
	mu   sync.Mutex
	byID map[string][][]byte
	last time.Time
}

// crashRun is what one scenario measured.
type crashRun struct {
	out      map[string][][]byte
	restarts []time.Duration // process start to "dcgpd serving"
	restores []string        // what each restore logged
	hit      []string        // what each kill interrupted
}

// TestCrashRecovery replays a cluster through the dcgpd process, kills it
// with SIGKILL at random points, inside a snapshot write and inside a
// re-smooth, restarts it each time, and checks that what it published
// equals an uninterrupted run's output: the same ids, every bin, each id
// either published once or re-published with identical content.
// TestLongCrashRecovery runs eight kills, also on real Citi Bike data.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crash test runs the dcgpd process many times")
	}
	crashRecovery(t, simulated(t, 5, 7), func(random func() killAt) []killAt {
		return []killAt{random(), {onLog: "snapshot writing", n: 2}, {onLog: "re-smooth started", n: 1}, random()}
	})
}

// TestLongCrashRecovery is TestCrashRecovery with eight kills, on the
// simulated cluster and on the paper's Citi Bike hubs.
func TestLongCrashRecovery(t *testing.T) {
	requireLongMode(t)
	plan := func(random func() killAt) []killAt {
		return []killAt{random(), {onLog: "snapshot writing", n: 2}, random(), {onLog: "re-smooth started", n: 1},
			random(), {onLog: "snapshot writing", n: 3}, {onLog: "re-smooth started", n: 2}, random()}
	}
	t.Run("simulated", func(t *testing.T) { crashRecovery(t, simulated(t, 5, 14), plan) })
	t.Run("citibike-4", func(t *testing.T) {
		skipWithoutCitiBike(t)
		crashRecovery(t, fromDataset(paperBikeDataset(t)), plan)
	})
}

// crashRecovery runs the kills plan makes (from a source of random
// delays) on c and compares with an uninterrupted run.
func crashRecovery(t *testing.T, c *cluster, plan func(random func() killAt) []killAt) {
	ref := runCrashScenario(t, c, nil, "")
	rng := rand.New(rand.NewPCG(uint64(len(c.bins)), 99))
	kills := plan(func() killAt { return killAt{delay: time.Duration(200+rng.IntN(1200)) * time.Millisecond} })
	got := runCrashScenario(t, c, kills, "snapshot=250ms,resmooth=400ms")
	for i, k := range kills {
		t.Logf("kill %d %v: %s", i+1, k, got.hit[i])
	}
	for i, d := range got.restarts {
		t.Logf("restart %d: serving after %v (%s)", i+1, d.Round(time.Millisecond), got.restores[i])
	}
	compareCrashOutputs(t, c, ref.out, got.out)
}

// compareCrashOutputs checks the interrupted run against the reference.
func compareCrashOutputs(t *testing.T, c *cluster, ref, got map[string][][]byte) {
	t.Helper()
	for _, b := range c.bins {
		if !hasFiltered(ref, "cluster0", b.Start) {
			t.Fatalf("the uninterrupted run has no filtered estimate for bin %s", b.Start)
		}
	}
	dups, identical := 0, 0
	maxDiff := 0.0
	for id, copies := range got {
		for _, cp := range copies[1:] {
			if !bytes.Equal(cp, copies[0]) {
				t.Fatalf("%s was published again with other content:\n%s\n%s", id, copies[0], cp)
			}
			dups++
		}
		want, ok := ref[id]
		if !ok {
			t.Fatalf("%s was published after restarts but not by the uninterrupted run", id)
		}
		if bytes.Equal(want[0], copies[0]) {
			identical++
			continue
		}
		d, err := latentDiff(want[0], copies[0])
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		maxDiff = math.Max(maxDiff, d)
	}
	for id, copies := range ref {
		if len(copies) != 1 {
			t.Fatalf("the uninterrupted run published %s %d times", id, len(copies))
		}
		if _, ok := got[id]; !ok {
			t.Fatalf("%s is missing after the restarts", id)
		}
	}
	t.Logf("%d ids (%d bins), %d byte-identical to the uninterrupted run, largest difference otherwise %.3g; %d true duplicates",
		len(ref), len(c.bins), identical, maxDiff, dups)
	if maxDiff > 1e-9 {
		t.Fatalf("estimates differ from the uninterrupted run by %.3g (> 1e-9)", maxDiff)
	}
}

// latentDiff is the largest difference between two messages' numbers,
// with everything else required equal.
func latentDiff(a, b []byte) (float64, error) {
	var x, y wire.LatentMessage
	if err := json.Unmarshal(a, &x); err != nil {
		return 0, err
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return 0, err
	}
	if x.Missing != y.Missing || len(x.Estimates) != len(y.Estimates) || len(x.Forecasts) != len(y.Forecasts) {
		return 0, fmt.Errorf("messages differ in shape: %s vs %s", a, b)
	}
	d := 0.0
	cmp := func(p, q []wire.Estimate) {
		for i := range p {
			for _, v := range [][2]float64{{p[i].Mean, q[i].Mean}, {p[i].Var, q[i].Var}, {p[i].Q05, q[i].Q05}, {p[i].Q95, q[i].Q95}} {
				d = math.Max(d, math.Abs(v[0]-v[1]))
			}
		}
	}
	cmp(x.Estimates, y.Estimates)
	for i := range x.Forecasts {
		cmp(x.Forecasts[i].Estimates, y.Forecasts[i].Estimates)
	}
	return d, nil
}

// runCrashScenario starts a NATS server, the dcgpd process and a replay
// of the cluster, kills the process as planned (restarting it each
// time), waits until everything is published and returns what was.
func runCrashScenario(t *testing.T, c *cluster, plan []killAt, pauses string) *crashRun {
	t.Helper()
	dir := t.TempDir()
	emb, err := natsio.StartEmbedded("127.0.0.1:-1", filepath.Join(dir, "js"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown()
	nc, err := nats.Connect(emb.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	out := &outputs{byID: map[string][][]byte{}}
	sub, err := nc.Subscribe("dcgp.latent.>", func(m *nats.Msg) {
		out.mu.Lock()
		id := m.Header.Get(jetstream.MsgIDHeader)
		out.byID[id] = append(out.byID[id], m.Data)
		out.last = time.Now()
		out.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)

	cfg := daemonConfig(t, c, 1)
	cfg.NATS.URL = emb.ClientURL()
	cfg.Snapshot.Dir = filepath.Join(dir, "snapshots")
	cfg.Snapshot.Interval = config.Duration{Duration: 300 * time.Millisecond}
	cfg.HTTP.Listen = "off"
	cfg.Log.Level, cfg.Log.Format = "debug", "json"
	cfgPath := filepath.Join(dir, "dcgpd.toml")
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	run := &crashRun{}
	proc := startDcgpd(t, cfgPath, pauses)
	if _, err := proc.waitLog("dcgpd serving", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The input goes into the stream once; the daemon reads it from there
	// across all its restarts.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := natsio.Replay(ctx, js, "cluster0", c.bins, natsio.ReplayOptions{Width: time.Hour, Watermark: true}); err != nil {
		t.Fatal(err)
	}
	for _, k := range plan {
		var hit string
		if k.onLog != "" {
			line, err := proc.waitLog(k.onLog, k.n, 30*time.Second)
			if err != nil {
				t.Fatalf("kill %v: %v", k, err)
			}
			hit = "inside: " + line
		} else {
			time.Sleep(k.delay)
			hit = proc.lastLine()
		}
		proc.kill(t)
		run.hit = append(run.hit, hit)
		began := time.Now()
		proc = startDcgpd(t, cfgPath, pauses)
		if _, err := proc.waitLog("dcgpd serving", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		run.restarts = append(run.restarts, time.Since(began))
		run.restores = append(run.restores, proc.restoreLine())
	}
	// Done when the last bin's filtered estimate is out and nothing more
	// has come for a while (re-smooth revisions).
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out.mu.Lock()
		done := hasFiltered(out.byID, "cluster0", c.bins[len(c.bins)-1].Start)
		quiet := time.Since(out.last) > 3*time.Second
		out.mu.Unlock()
		if done && quiet {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last bin's estimate did not arrive in 5 minutes; log tail:\n%s", proc.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	proc.stop(t)
	_ = nc.Flush()
	out.mu.Lock()
	run.out = out.byID
	out.mu.Unlock()
	return run
}

// dcgpdProc is a running `dcgpd serve` whose JSON log is read line by
// line.
type dcgpdProc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []map[string]any
	raw   []string
	done  chan struct{}
	added chan struct{}
}

func startDcgpd(t *testing.T, cfgPath, pauses string) *dcgpdProc {
	t.Helper()
	cmd := exec.Command(dcgpdPath, "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "DCGPD_FAULT_PAUSE="+pauses)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &dcgpdProc{cmd: cmd, done: make(chan struct{}), added: make(chan struct{}, 1)}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			_ = json.Unmarshal(sc.Bytes(), &m)
			p.mu.Lock()
			p.lines = append(p.lines, m)
			p.raw = append(p.raw, sc.Text())
			p.mu.Unlock()
			select {
			case p.added <- struct{}{}:
			default:
			}
		}
	}()
	return p
}

// waitLog waits for the n-th log line with message msg and returns it.
func (p *dcgpdProc) waitLog(msg string, n int, d time.Duration) (string, error) {
	deadline := time.After(d)
	for {
		p.mu.Lock()
		seen := 0
		for i, l := range p.lines {
			if l["message"] == msg {
				if seen++; seen == n {
					s := p.raw[i]
					p.mu.Unlock()
					return s, nil
				}
			}
		}
		p.mu.Unlock()
		select {
		case <-p.added:
		case <-p.done:
			return "", fmt.Errorf("dcgpd exited before %q #%d:\n%s", msg, n, p.tail())
		case <-deadline:
			return "", fmt.Errorf("no %q #%d within %v; log tail:\n%s", msg, n, d, p.tail())
		}
	}
}

func (p *dcgpdProc) lastLine() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.raw) == 0 {
		return "before any log line"
	}
	return "after: " + p.raw[len(p.raw)-1]
}

func (p *dcgpdProc) restoreLine() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, l := range p.lines {
		if m, _ := l["message"].(string); strings.HasPrefix(m, "restored") || strings.HasPrefix(m, "no snapshot") || strings.HasPrefix(m, "no usable") {
			return p.raw[i]
		}
	}
	return "no restore logged"
}

func (p *dcgpdProc) tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.raw[max(0, len(p.raw)-20):], "\n")
}

// kill sends SIGKILL: no shutdown code runs.
func (p *dcgpdProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	<-p.done
}

// stop asks for a graceful shutdown and waits for it.
func (p *dcgpdProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Error("dcgpd did not stop within 30s of SIGINT")
		_ = p.cmd.Process.Kill()
	}
	_ = p.cmd.Wait()
}
