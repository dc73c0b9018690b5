package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// TestIsModelConsumer: a model's consumers are its epochs' and its single
// instance's, never another model's whose name it prefixes.
func TestIsModelConsumer(t *testing.T) {
	for _, c := range []struct {
		name, model string
		want        bool
	}{
		{"dcgpd_city_e15", "city", true},
		{"dcgpd_city_e1", "city", true},
		{"dcgpd_city", "city", true},
		{epochConsumer("city", 18446744073709551615), "city", true},
		{"dcgpd_city_e", "city", false},
		{"dcgpd_city_e1x", "city", false},
		{"dcgpd_city2_e3", "city", false},
		{"dcgpd_city_e1_e3", "city", false}, // model city_e1, epoch 3
		{"dcgpd_city_e1_e3", "city_e1", true},
		{"dcgpd_cit", "city", false},
		{"other_city_e1", "city", false},
		{"", "city", false},
	} {
		if got := isModelConsumer(c.name, c.model); got != c.want {
			t.Errorf("isModelConsumer(%q, %q) = %v, want %v", c.name, c.model, got, c.want)
		}
	}
}

// TestDropConsumers: a takeover deletes every consumer of the model (its
// previous epochs' and a single instance's), and only those: 20 of the
// model among 40 of models whose names it prefixes or not.
func TestDropConsumers(t *testing.T) {
	emb, err := natsio.StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown()
	js := natstest.JetStream(t, emb.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natsio.ObsStream, Subjects: []string{"dcgp.obs.>"}})
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	add := func(name, model string) {
		t.Helper()
		if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, FilterSubject: "dcgp.obs." + model}); err != nil {
			t.Fatal(err)
		}
	}
	for e := 1; e <= 19; e++ {
		add(epochConsumer("city", uint64(e)), "city")
	}
	add("dcgpd_city", "city")
	for e := 1; e <= 20; e++ {
		name := epochConsumer(fmt.Sprintf("city_e%d", e), 7)
		add(name, fmt.Sprintf("city_e%d", e))
		keep = append(keep, name)
		name = epochConsumer("town", uint64(e))
		add(name, "town")
		keep = append(keep, name)
	}
	n := &clusterNode{js: js}
	held := &slot{model: "city"}
	held.extend(time.Now(), time.Hour)
	if err := n.dropConsumers(ctx, held, "city"); err != nil {
		t.Fatal(err)
	}
	var left []string
	names := st.ConsumerNames(ctx)
	for name := range names.Name() {
		left = append(left, name)
	}
	if err := names.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		t.Fatal(err)
	}
	slices.Sort(left)
	slices.Sort(keep)
	if !slices.Equal(left, keep) {
		t.Fatalf("%d consumers left, want the %d of other models", len(left), len(keep))
	}
}

// TestDeleteOwnConsumer: a dropped epoch deletes its own consumer (one
// created after the successor's deletion) and no other.
func TestDeleteOwnConsumer(t *testing.T) {
	emb, err := natsio.StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown()
	js := natstest.JetStream(t, emb.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natsio.ObsStream, Subjects: []string{"dcgp.obs.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []uint64{15, 16} {
		if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: epochConsumer("city", e), FilterSubject: "dcgp.obs.city"}); err != nil {
			t.Fatal(err)
		}
	}
	n := &clusterNode{js: js, ttl: time.Second, log: zerolog.Nop()}
	n.deleteOwnConsumer(&slot{model: "city", epoch: 15})
	if _, err := st.Consumer(ctx, epochConsumer("city", 15)); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the lost epoch's consumer: %v, want it deleted", err)
	}
	if _, err := st.Consumer(ctx, epochConsumer("city", 16)); err != nil {
		t.Errorf("the successor's consumer: %v, want it kept", err)
	}
	// Already gone: nothing to do, no error.
	n.deleteOwnConsumer(&slot{model: "city", epoch: 15})
}

// TestStartAfterLeaseLost: an instance resumed past its lease in the
// middle of a takeover stops there: its successor's consumer stays.
func TestStartAfterLeaseLost(t *testing.T) {
	emb, err := natsio.StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown()
	js := natstest.JetStream(t, emb.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natsio.ObsStream, Subjects: []string{"dcgp.obs.>"}})
	if err != nil {
		t.Fatal(err)
	}
	succ := epochConsumer("city", 16)
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: succ, FilterSubject: "dcgp.obs.city"}); err != nil {
		t.Fatal(err)
	}
	n := &clusterNode{js: js, o: Options{NATS: config.DefaultConfig().NATS}, ttl: time.Second, log: zerolog.Nop()}
	s := &slot{model: "city", epoch: 15, done: make(chan struct{})}
	s.extend(time.Now().Add(-time.Hour), n.ttl) // the local deadline passed while it was stopped
	if err := n.start(ctx, s, config.ModelConfig{Name: "city"}); !errors.Is(err, errLeaseLost) {
		t.Fatalf("start with an expired lease: %v, want errLeaseLost", err)
	}
	if _, err := st.Consumer(ctx, succ); err != nil {
		t.Fatalf("the successor's consumer: %v, want it kept", err)
	}
}
