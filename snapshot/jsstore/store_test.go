package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/snapshot"
	"github.com/dcgpd/dcgpd/snapshot/storetest"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// jsHarness runs the store contract on buckets of a fresh server (one
// per case, so the cases do not see each other's models).
func jsHarness(newJS func(t *testing.T) jetstream.JetStream, replicas int) storetest.Harness {
	return storetest.Harness{
		New: func(t *testing.T) snapshot.Store {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := New(ctx, newJS(t), replicas)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		// Damage swaps the generation's object for other bytes behind the
		// pointer, whose size and SHA-256 then no longer match. The bytes
		// go under a new name, as the store never reuses one: rewriting
		// an object in place purges its chunks, and a reader that got the
		// old metadata from a lagging replica would wait for them until
		// its deadline.
		Damage: func(t *testing.T, st snapshot.Store, name string, g snapshot.Generation) {
			s := st.(*Store)
			ctx := context.Background()
			p, _, err := s.pointer(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			o := p.Current
			if g == snapshot.Previous {
				o = p.Previous
			}
			o.Name = objectName(name)
			if _, err := s.obj.PutBytes(ctx, o.Name, []byte("damaged")); err != nil {
				t.Fatal(err)
			}
			val, _ := json.Marshal(p)
			if _, err := s.kv.Put(ctx, name, val); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// TestJetStreamStoreSuite: the JetStream store passes the contract the
// file store passes, on one embedded server at one replica.
func TestJetStreamStoreSuite(t *testing.T) {
	storetest.Run(t, jsHarness(func(t *testing.T) jetstream.JetStream {
		emb, err := natsio.StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(emb.Shutdown)
		return natstest.JetStream(t, emb.ClientURL())
	}, 1))
}

// TestJetStreamStoreSuiteR3: the same contract on a 3-node cluster with
// the buckets at 3 replicas (one cluster, a model name per case).
func TestJetStreamStoreSuiteR3(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a 3-node JetStream cluster")
	}
	c := natstest.Start(t, 3)
	js := natstest.JetStream(t, c.URLs())
	storetest.Run(t, jsHarness(func(t *testing.T) jetstream.JetStream {
		// The cases share the cluster and the suite writes the same
		// names, so each case starts from empty buckets: purged, not
		// deleted, as deleting and at once recreating an R3 stream of
		// the same name can leave it without a leader for seconds. A
		// purge is applied by the stream leader before it answers, and
		// the store reads its pointers from that leader.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, name := range []string{"KV_" + snapPointerBucket, "OBJ_" + snapObjectBucket} {
			st, err := js.Stream(ctx, name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				continue // the first case creates it
			}
			if err == nil {
				err = st.Purge(ctx)
			}
			if err != nil {
				t.Fatalf("emptying stream %s for the next case: %v", name, err)
			}
		}
		return js
	}, 3))
}

// TestJetStreamStoreFencing: two instances restore the same model; once
// one has written, the other's write is refused with ErrFenced, leaves no
// object behind and does not move the pointer.
func TestJetStreamStoreFencing(t *testing.T) {
	emb, err := natsio.StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown()
	ctx := context.Background()
	js := natstest.JetStream(t, emb.ClientURL())
	a, err := New(ctx, js, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(ctx, natstest.JetStream(t, emb.ClientURL()), 1)
	if err := a.Write("m", []byte("a1")); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{a, b} {
		if got, err := s.Read("m", snapshot.Current); err != nil || string(got) != "a1" {
			t.Fatalf("restore: %q %v", got, err)
		}
	}
	if err := b.Write("m", []byte("b1")); err != nil {
		t.Fatal(err)
	}
	if err := a.Write("m", []byte("a2")); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale write: %v, want ErrFenced", err)
	}
	if got, _ := b.Read("m", snapshot.Current); string(got) != "b1" {
		t.Fatalf("current after the stale write: %q", got)
	}
	if got, _ := b.Read("m", snapshot.Previous); string(got) != "a1" {
		t.Fatalf("previous after the stale write: %q", got)
	}
	// Two first writers of a new model: only one wins.
	c, _ := New(ctx, js, 1)
	if _, err := a.Read("new", snapshot.Current); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := c.Read("new", snapshot.Current); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatal(err)
	}
	if err := c.Write("new", []byte("c")); err != nil {
		t.Fatal(err)
	}
	if err := a.Write("new", []byte("a")); !errors.Is(err, ErrFenced) {
		t.Fatalf("second first writer: %v", err)
	}
	// Objects: the two live generations of m and the one of new, no
	// orphan of a refused write.
	lister, _ := js.ObjectStore(ctx, snapObjectBucket)
	infos, err := lister.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 3 {
		var names []string
		for _, i := range infos {
			names = append(names, i.Name)
		}
		t.Fatalf("%d objects %v, want 3", len(infos), names)
	}
}

// FuzzDecodePointer: any bytes in the pointer bucket give a checked
// pointer or ErrCorrupt, never a panic; a valid pointer round-trips.
func FuzzDecodePointer(f *testing.F) {
	f.Add([]byte(`{"current":{"name":"m/1-ab","size":3,"sha256":"` + strings.Repeat("0a", 32) + `"}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"current":{"name":"","size":-1,"sha256":"zz"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePointer(b)
		if err != nil {
			if !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		for _, o := range []*jsObject{p.Current, p.Previous} {
			if o != nil && (o.Name == "" || o.Size < 0 || len(o.SHA256) != 64) {
				t.Fatalf("unchecked entry %+v", o)
			}
		}
	})
}

// TestUntilPlaced: the bucket creation is tried again while the cluster
// answers "no suitable peers" (as one still learning its peers does),
// until the context ends; any other answer ends it at once.
func TestUntilPlaced(t *testing.T) {
	noPeers := &jetstream.APIError{Code: 400, ErrorCode: jsNoSuitablePeers, Description: "no suitable peers for placement"}
	other := &jetstream.APIError{Code: 400, ErrorCode: 10074, Description: "replicas > 1 not supported in non-clustered mode"}
	cases := []struct {
		name      string
		answers   []error // the last one repeats
		wantCalls int
		want      error
	}{
		{"placed after two refusals", []error{noPeers, noPeers, nil}, 3, nil},
		{"other error at once", []error{other}, 1, other},
		{"never placed", []error{noPeers}, -1, context.DeadlineExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			calls := 0
			err := untilPlaced(ctx, func() error {
				calls++
				return c.answers[min(calls, len(c.answers))-1]
			})
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("%v, want %v", err, c.want)
			}
			if c.wantCalls >= 0 && calls != c.wantCalls {
				t.Fatalf("%d calls, want %d", calls, c.wantCalls)
			}
			if c.wantCalls < 0 && (calls < 2 || !strings.Contains(err.Error(), "no suitable peers")) {
				t.Fatalf("%d calls, %v: want several and the last refusal named", calls, err)
			}
		})
	}
}
