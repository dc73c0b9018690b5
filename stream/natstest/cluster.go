// Package natstest runs JetStream clusters of embedded nats-servers in
// process, for tests of several dcgpd instances.
package natstest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is n routed nats-servers with JetStream, each with its own
// store directory, on fixed loopback ports so that a stopped server
// restarts as the same machine.
type Cluster struct {
	t     testing.TB
	opts  []*server.Options
	Nodes []*server.Server
}

// freePorts reserves n loopback ports (all held open until every one is
// drawn, so none repeats).
func freePorts(t testing.TB, n int) []int {
	var ls []net.Listener
	var ps []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ps = append(ps, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ps
}

// Start runs an n-node cluster and waits until its JetStream meta group
// has a leader and every peer; it shuts down at the end of the test.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[n+i]))
	}
	c := &Cluster{t: t}
	for i := range n {
		o := &server.Options{ServerName: fmt.Sprintf("N%d", i), Host: "127.0.0.1", Port: ports[i],
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true, MaxPayload: 8 << 20,
			Cluster: server.ClusterOpts{Name: "C", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ","))}
		c.opts = append(c.opts, o)
		c.Nodes = append(c.Nodes, nil)
	}
	for i := range n {
		c.Restart(i)
	}
	t.Cleanup(c.Shutdown)
	c.WaitReady(30 * time.Second)
	return c
}

// URLs lists every node's client URL, comma-separated.
func (c *Cluster) URLs() string {
	var us []string
	for _, o := range c.opts {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(us, ",")
}

// Stop shuts node i down (its store stays for Restart).
func (c *Cluster) Stop(i int) {
	if s := c.Nodes[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.Nodes[i] = nil
	}
}

// Restart starts node i again on its ports and store.
func (c *Cluster) Restart(i int) {
	s, err := server.NewServer(c.opts[i])
	if err != nil {
		c.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		c.t.Fatalf("node %d not ready in 20s", i)
	}
	c.Nodes[i] = s
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for i := range c.Nodes {
		c.Stop(i)
	}
}

// WaitReady waits until JetStream answers account requests through the
// cluster (a meta leader is elected).
func (c *Cluster) WaitReady(d time.Duration) {
	c.t.Helper()
	WaitJetStream(c.t, c.URLs(), d)
}

// WaitJetStream waits until JetStream at urls (comma-separated) answers
// account requests, failing t after d: a cluster's meta leader is elected.
func WaitJetStream(t testing.TB, urls string, d time.Duration) {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("JetStream at %s not ready in %v: %v", urls, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
