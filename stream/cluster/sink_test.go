package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestFencedSinkRefusedAfterSuccessorFence: an owner whose own lease
// clock still says it holds the model (a clock that lies, or a pause the
// monotonic clock did not see) publishes an output with an id nobody has
// published yet after its successor's fence: the server refuses it, the
// owner marks the lease lost, and the stream stores nothing of it. This
// is the one case the local lease gate cannot catch, and the one the
// cluster tests cannot provoke reliably (there a resumed owner's late
// outputs are re-sends of ids its successor has already stored, so the
// stream's de-duplication would drop them even without the fence).
func TestFencedSinkRefusedAfterSuccessorFence(t *testing.T) {
	emb, nc := natstest.Embedded(t)
	js := natstest.JetStream(t, emb.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natsio.LatentStream,
		Subjects: []string{"dcgp.latent.>", "dcgp.fence.>"}})
	if err != nil {
		t.Fatal(err)
	}
	publishFence := func(instance string, epoch uint64) uint64 {
		t.Helper()
		b, _ := json.Marshal(fence{Instance: instance, Epoch: epoch})
		ack, err := js.Publish(ctx, "dcgp.fence.city", b)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	owner := &slot{model: "city", instance: "a", epoch: 3}
	owner.extend(time.Now().Add(time.Hour), time.Hour) // its clock says the lease holds for long
	sink := newFencedSink(natsio.NewPublisher(nc, js, "dcgp", zerolog.Nop()), owner, "dcgp.fence.city")
	sink.fenceSeq = publishFence("a", 3)
	stop := make(chan struct{})
	ran := make(chan struct{})
	go func() { sink.run(stop); close(ran) }()
	defer func() { close(stop); <-ran }()

	publish := func(id string) error {
		t.Helper()
		res := make(chan error, 1)
		sink.Publish("dcgp.latent.city", id, []byte(`{}`), func(err error) { res <- err })
		select {
		case err := <-res:
			return err
		case <-time.After(30 * time.Second):
			t.Fatalf("output %s: no outcome in 30 s", id)
			return nil
		}
	}
	if err := publish("city/1/filtered/0"); err != nil {
		t.Fatalf("the owner's output before any successor: %v", err)
	}
	publishFence("b", 4) // the successor takes over
	if err := publish("city/2/filtered/0"); !natsio.IsFenceError(err) {
		t.Fatalf("the old owner's output after its successor's fence: %v, want the server's fence refusal", err)
	}
	if owner.valid() {
		t.Errorf("after a fence refusal the old owner still thinks it holds the lease")
	}
	if err := publish("city/3/filtered/0"); !errors.Is(err, errLeaseLost) {
		t.Errorf("an output once fenced: %v, want errLeaseLost without a send", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Two fences and the one output published before the successor's.
	if info.State.Msgs != 3 {
		t.Errorf("the stream holds %d messages, want 3 (two fences, one output)", info.State.Msgs)
	}
	m, err := st.GetLastMsgForSubject(ctx, "dcgp.latent.city")
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get(wire.EpochHeader) != "3" || m.Header.Get("Nats-Msg-Id") != "city/1/filtered/0" {
		t.Errorf("the stored output: epoch %q id %q, want epoch 3 id city/1/filtered/0", m.Header.Get(wire.EpochHeader), m.Header.Get("Nats-Msg-Id"))
	}
}
