package test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// servers is a 3-node JetStream cluster a test can stop and restart node
// by node: natstest.Cluster (embedded, in process) or natsProcs
// (separate nats-server processes).
type servers interface {
	URLs() string
	Stop(i int)
	Restart(i int)
}

// natsServerBin is the nats-server command built from this module's own
// dependency (github.com/nats-io/nats-server/v2, the version in go.mod),
// once per test binary.
var natsServerBin = struct {
	once sync.Once
	path string
	err  error
}{}

func natsServerPath(t *testing.T) string {
	t.Helper()
	natsServerBin.once.Do(func() {
		p := filepath.Join(filepath.Dir(dcgpdPath), "nats-server")
		out, err := exec.Command("go", "build", "-o", p, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			natsServerBin.err = fmt.Errorf("building nats-server: %v\n%s", err, out)
			return
		}
		natsServerBin.path = p
	})
	if natsServerBin.err != nil {
		t.Fatal(natsServerBin.err)
	}
	return natsServerBin.path
}

// natsProcs is an n-node JetStream cluster of nats-server processes, each
// with its own configuration file and store, on fixed loopback ports so
// that a stopped node restarts as the same server.
type natsProcs struct {
	t     *testing.T
	bin   string
	confs []string
	ports []int
	cmds  []*exec.Cmd
	logs  []*os.File
}

// startNATSProcs starts the cluster and waits until JetStream answers
// through it; every process is killed at the end of the test.
func startNATSProcs(t *testing.T, n int) *natsProcs {
	t.Helper()
	c := &natsProcs{t: t, bin: natsServerPath(t), cmds: make([]*exec.Cmd, n), logs: make([]*os.File, n)}
	var ls []net.Listener
	for range 2 * n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		c.ports = append(c.ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", c.ports[n+i]))
	}
	dir := t.TempDir()
	for i := range n {
		conf := fmt.Sprintf(`server_name: P%d
listen: "127.0.0.1:%d"
max_payload: 8MB
jetstream { store_dir: %q }
cluster { name: P, listen: "127.0.0.1:%d", routes: [%s] }
`, i, c.ports[i], filepath.Join(dir, fmt.Sprintf("js%d", i)), c.ports[n+i], strings.Join(routes, ", "))
		p := filepath.Join(dir, fmt.Sprintf("n%d.conf", i))
		if err := os.WriteFile(p, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		c.confs = append(c.confs, p)
	}
	t.Cleanup(func() {
		for i := range c.cmds {
			c.Stop(i)
		}
	})
	for i := range n {
		c.Restart(i)
	}
	c.waitReady(30 * time.Second)
	return c
}

// URLs lists every node's client URL, comma-separated.
func (c *natsProcs) URLs() string {
	var us []string
	for i := range c.confs {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", c.ports[i]))
	}
	return strings.Join(us, ",")
}

// Stop kills node i (SIGKILL: a crashed server; its store stays).
func (c *natsProcs) Stop(i int) {
	if cmd := c.cmds[i]; cmd != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		c.cmds[i] = nil
		_ = c.logs[i].Close()
	}
}

// Restart starts node i on its ports and store and waits until it
// accepts connections.
func (c *natsProcs) Restart(i int) {
	c.t.Helper()
	lf, err := os.OpenFile(c.confs[i]+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, "-c", c.confs[i])
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmds[i], c.logs[i] = cmd, lf
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.ports[i]), time.Second)
		if err == nil {
			_ = conn.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(c.confs[i] + ".log")
			c.t.Fatalf("nats-server %d not accepting connections in 20s: %v\n%s", i, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitReady waits until JetStream answers account requests through the
// cluster (a meta leader is elected).
func (c *natsProcs) waitReady(d time.Duration) {
	c.t.Helper()
	natstest.WaitJetStream(c.t, c.URLs(), d)
}

// TestLongNATSProcsCluster: the repository's own nats-server processes
// form a JetStream cluster that keeps an R3 stream writable with one node
// killed and serves it again once the node is back (long mode: it builds
// nats-server and waits for elections, 10-40 s on a loaded machine).
func TestLongNATSProcsCluster(t *testing.T) {
	requireLongMode(t)
	c := startNATSProcs(t, 3)
	nc, js := clientJS(t, c.URLs())
	_ = nc
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PROBE", Subjects: []string{"probe"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	c.Stop(2)
	publish := func() {
		for {
			if _, err := js.Publish(ctx, "probe", []byte("x")); err == nil {
				return
			} else if ctx.Err() != nil {
				t.Fatalf("publish with a node down: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	publish()
	c.Restart(2)
	publish()
	info, err := js.Stream(ctx, "PROBE")
	if err != nil {
		t.Fatal(err)
	}
	if n := info.CachedInfo().State.Msgs; n != 2 {
		t.Fatalf("stream holds %d messages, want 2", n)
	}
}
