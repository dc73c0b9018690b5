package natsio

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// TestPublisherCountsDuplicates: an output the server drops as a
// duplicate is counted, as expected when the daemon said a replay may
// repeat it, and otherwise also logged as a warning naming its id;
// outputs with new ids are stored and not counted.
func TestPublisherCountsDuplicates(t *testing.T) {
	emb, err := StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown()
	nc, err := nats.Connect(emb.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}, Duplicates: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	pub := NewPublisher(nc, js, "dcgp", zerolog.New(&logged))
	pub.ExpectDuplicates(func(subject string) bool { return subject == "out.replaying" })
	for _, p := range []struct{ subject, id string }{
		{"out.replaying", "m/1/filtered/0/aa"}, {"out.replaying", "m/1/filtered/0/aa"}, // a replay: expected
		{"out.live", "m/2/filtered/0/aa"}, {"out.live", "m/2/filtered/0/aa"}, // live: not expected
		{"out.live", "m/2/filtered/0/bb"}, // a new model digest: stored
	} {
		pub.Publish(p.subject, p.id, []byte(p.id), func(err error) {
			if err != nil {
				t.Errorf("%s: %v", p.id, err)
			}
		})
	}
	pub.Close()
	if e, u := pub.Duplicates(); e != 1 || u != 1 {
		t.Errorf("duplicates: %d expected, %d unexpected; want 1 and 1", e, u)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 3 {
		t.Errorf("stream holds %d messages, want 3", info.State.Msgs)
	}
	if log := logged.String(); strings.Count(log, `"level":"warn"`) != 1 || !strings.Contains(log, `"id":"m/2/filtered/0/aa"`) {
		t.Errorf("log: %s; want one warning naming m/2/filtered/0/aa", log)
	}
}
