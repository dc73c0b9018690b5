package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// clusterLease is the lease the cluster tests run with: short, so that
// takeovers happen within the test's time.
const clusterLease = 3 * time.Second

// writeClusterConfig writes the one configuration every instance of a
// cluster test shares: cluster mode, snapshots in JetStream, streams and
// buckets at 3 replicas on the in-process cluster.
func writeClusterConfig(t *testing.T, c *cluster, urls string, models int) string {
	t.Helper()
	cfg := daemonConfig(t, c, models)
	cfg.NATS.URL = urls
	cfg.NATS.Replicas = 3
	cfg.Cluster = config.ClusterConfig{Enabled: true, Lease: config.Duration{Duration: clusterLease}}
	cfg.Snapshot.Store = "jetstream"
	cfg.Snapshot.Interval = config.Duration{Duration: 300 * time.Millisecond}
	cfg.HTTP.Listen = "off"
	// Debug: the tests act on the re-smooth's log lines. The models keep
	// the default re-smooth schedule (a job is pending almost always).
	cfg.Log.Level, cfg.Log.Format = "debug", "json"
	p := filepath.Join(t.TempDir(), "dcgpd.toml")
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// owners reads the lease bucket: model -> instance.
func owners(t *testing.T, js jetstream.JetStream) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := map[string]string{}
	kv, err := js.KeyValue(ctx, "dcgp_owners")
	if err != nil {
		return out
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return out
	}
	for k := range keys.Keys() {
		if e, err := kv.Get(ctx, k); err == nil {
			out[k] = string(e.Value())
		}
	}
	return out
}

// instanceOf is the default instance name of a process ("<host>-<pid>").
func instanceOf(p *dcgpdProc) string {
	h, _ := os.Hostname()
	return h + "-" + strconv.Itoa(p.cmd.Process.Pid)
}

// waitOwners polls the leases until cond holds.
func waitOwners(t *testing.T, js jetstream.JetStream, d time.Duration, what string, cond func(map[string]string) bool) map[string]string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		o := owners(t, js)
		if cond(o) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; leases: %v", what, d, o)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// load counts the models each instance holds.
func load(o map[string]string) map[string]int {
	n := map[string]int{}
	for _, inst := range o {
		n[inst]++
	}
	return n
}

func clientJS(t *testing.T, urls string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// TestLongClusterSpread: three `dcgpd serve` processes on one configuration
// of 12 models own 4 ± 1 each; when one is killed (-9) the other two hold
// all 12 within a lease plus a renewal period plus restore time; when one
// of those stops cleanly (SIGINT: snapshot, release) the last holds all.
func TestLongClusterSpread(t *testing.T) {
	requireLongMode(t)
	nodes := natstest.Start(t, 3)
	_, js := clientJS(t, nodes.URLs())
	cfgPath := writeClusterConfig(t, simulated(t, 3, 2), nodes.URLs(), 12)
	var procs []*dcgpdProc
	for range 3 {
		p := startDcgpd(t, cfgPath, "")
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s: %s", instanceOf(p), p.ownershipLog())
			}
			p.stop(t)
			noRace(t, p)
		})
		procs = append(procs, p)
	}
	for _, p := range procs {
		if _, err := p.waitLog("dcgpd serving", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// Instances started together may take models before they see each
	// other; handovers then settle the spread.
	began := time.Now()
	o := waitOwners(t, js, 45*time.Second, "12 models over 3 instances, 4 ± 1 each", func(o map[string]string) bool {
		if len(o) != 12 {
			return false
		}
		for _, p := range procs {
			if n := load(o)[instanceOf(p)]; n < 3 || n > 5 {
				return false
			}
		}
		return true
	})
	t.Logf("3 instances: %v, settled %v after all were serving", load(o), time.Since(began).Round(time.Millisecond))
	for _, p := range procs {
		t.Logf("%s: %s", instanceOf(p), p.ownershipLog())
	}

	dead := instanceOf(procs[0])
	procs[0].kill(t)
	killed := time.Now()
	// Lease expiry, one step, and up to 10 s for the restores on a
	// loaded 2-core machine (four takeovers, each a fence, a snapshot
	// read and a consumer at 3 replicas).
	bound := clusterLease + clusterLease/3 + 10*time.Second
	o = waitOwners(t, js, bound, "all 12 on the two survivors", func(o map[string]string) bool {
		if len(o) != 12 {
			return false
		}
		_, has := load(o)[dead]
		return !has
	})
	t.Logf("kill -9 of one instance: the other two hold all 12 after %v (lease %v): %v", time.Since(killed).Round(time.Millisecond), clusterLease, load(o))

	left := instanceOf(procs[1])
	procs[1].stop(t)
	stopped := time.Now()
	waitOwners(t, js, bound, "all 12 on the last instance", func(o map[string]string) bool {
		return len(o) == 12 && load(o)[instanceOf(procs[2])] == 12
	})
	t.Logf("SIGINT of another: the last holds all 12 after %v", time.Since(stopped).Round(time.Millisecond))
	if _, err := procs[1].waitLog("model handed over", 1, time.Second); err != nil {
		t.Errorf("%s stopped without a clean handover: %v", left, err)
	}
}

// ownershipLog counts a process's ownership log lines.
func (p *dcgpdProc) ownershipLog() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := map[string]int{}
	var lost []string
	for i, l := range p.lines {
		switch m, _ := l["message"].(string); m {
		case "model acquired", "handing model over", "model handed over", "model lease lost: stopped working on it", "model not started; lease released":
			n[m]++
			if m != "model acquired" && m != "handing model over" && m != "model handed over" {
				lost = append(lost, p.raw[i])
			}
		}
	}
	return fmt.Sprint(n, lost)
}

// noRace fails the test if a process built with -race (GOFLAGS=-race)
// reported a data race.
func noRace(t *testing.T, p *dcgpdProc) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, l := range p.raw {
		if strings.Contains(l, "WARNING: DATA RACE") {
			t.Errorf("%s reported a data race:\n%s", instanceOf(p), strings.Join(p.raw[i:min(len(p.raw), i+40)], "\n"))
			return
		}
	}
}
