package cluster

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// ownedHost records Owned calls; a model that never starts needs nothing
// else of the host.
type ownedHost struct{ owned map[string]bool }

func (h *ownedHost) NewRunner(config.ModelConfig, stream.Sink, zerolog.Logger) (*stream.Runner, error) {
	panic("not reached: start fails before the runner")
}
func (h *ownedHost) Deliver(context.Context, *stream.Runner, jetstream.Msg, stream.Acker) {}
func (h *ownedHost) Owned(model string, r *stream.Runner)                                 { h.owned[model] = r != nil }

// TestAcquireStartFailureReleases: a model whose lease was won but whose
// start failed for another reason than the lease (here the input stream
// does not exist) is released and logged as not started, counted as
// failed, never as a lost lease.
func TestAcquireStartFailureReleases(t *testing.T) {
	emb, err := natsio.StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown()
	js := natstest.JetStream(t, emb.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ttl := 5 * time.Second
	l, err := newLeases(ctx, js, "a", ttl, 1)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	n := &clusterNode{js: js, l: l, o: Options{NATS: config.DefaultConfig().NATS}, host: &ownedHost{owned: map[string]bool{}},
		ttl: ttl, slots: map[string]*slot{}, unowned: map[string]time.Time{}, met: newClusterMetrics(prometheus.NewRegistry()),
		log: zerolog.New(&logs)}
	n.acquire(ctx, config.ModelConfig{Name: "city"})
	if owner, err := l.owner(ctx, "city"); err != nil || owner != "" {
		t.Fatalf("lease after a failed start: owner %q (%v), want released", owner, err)
	}
	if lost, failed := counted(t, n.met.handovers.WithLabelValues("lost")), counted(t, n.met.handovers.WithLabelValues("failed")); lost != 0 || failed != 1 {
		t.Fatalf("handovers lost %v, failed %v; want 0 and 1", lost, failed)
	}
	if out := logs.String(); strings.Contains(out, "lease lost") || !strings.Contains(out, "model not started; lease released") {
		t.Fatalf("log:\n%s", out)
	}
	if len(n.slots) != 0 {
		t.Fatalf("%d slots kept", len(n.slots))
	}
}

func counted(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
