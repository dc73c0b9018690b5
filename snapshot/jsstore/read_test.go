package jsstore

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/snapshot"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// laggingObjects answers the first fails reads with err, as a replica
// still applying an object's chunks (ErrDigestMismatch) or its metadata
// (ErrObjectNotFound) does, then reads the real object.
type laggingObjects struct {
	jetstream.ObjectStore
	err   error
	fails int32
	reads atomic.Int32
}

func (l *laggingObjects) GetBytes(ctx context.Context, name string, opts ...jetstream.GetObjectOpt) ([]byte, error) {
	if l.reads.Add(1) <= l.fails {
		return nil, l.err
	}
	return l.ObjectStore.GetBytes(ctx, name, opts...)
}

// oneServerStore is a store on a fresh single embedded server.
func oneServerStore(t *testing.T) (*Store, jetstream.JetStream) {
	t.Helper()
	emb, err := natsio.StartEmbedded("127.0.0.1:-1", t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	js := natstest.JetStream(t, emb.ClientURL())
	s, err := New(context.Background(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s, js
}

// TestJetStreamStoreReadRetries: an object a lagging replica gives
// incomplete or not at all is read again; a snapshot still unreadable
// after objectReadAttempts reads is ErrCorrupt, names the model and keeps
// nats.go's error; other errors are not retried.
func TestJetStreamStoreReadRetries(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		fails     int32
		wantReads int32
		wantErr   error // nil: the read succeeds
	}{
		{"digest mismatch twice", jetstream.ErrDigestMismatch, 2, 3, nil},
		{"not found once", jetstream.ErrObjectNotFound, 1, 2, nil},
		{"digest mismatch until the last read", jetstream.ErrDigestMismatch, objectReadAttempts - 1, objectReadAttempts, nil},
		{"digest mismatch throughout", jetstream.ErrDigestMismatch, objectReadAttempts, objectReadAttempts, snapshot.ErrCorrupt},
		{"bucket gone: not retried", jetstream.ErrBucketNotFound, 1, 1, jetstream.ErrBucketNotFound},
		{"no responders once", nats.ErrNoResponders, 1, 2, nil},
		{"no responders throughout: not corrupt", nats.ErrNoResponders, objectReadAttempts, objectReadAttempts, nats.ErrNoResponders},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := oneServerStore(t)
			if err := s.Write("m", []byte("state")); err != nil {
				t.Fatal(err)
			}
			lag := &laggingObjects{ObjectStore: s.obj, err: c.err, fails: c.fails}
			s.obj = lag
			got, err := s.Read("m", snapshot.Current)
			if n := lag.reads.Load(); n != c.wantReads {
				t.Errorf("%d object reads, want %d", n, c.wantReads)
			}
			if c.wantErr == nil {
				if err != nil || string(got) != "state" {
					t.Fatalf("read %q, %v; want the state written", got, err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) || !errors.Is(err, c.err) || !strings.Contains(err.Error(), "snapshot m current") {
				t.Fatalf("error %v: want %v wrapping %v and naming snapshot m current", err, c.wantErr, c.err)
			}
			if corrupt := errors.Is(err, snapshot.ErrCorrupt); corrupt != errors.Is(c.wantErr, snapshot.ErrCorrupt) {
				t.Fatalf("error %v: corrupt %v, want %v", err, corrupt, !corrupt)
			}
		})
	}
}

// TestJetStreamStoreLeaderGet: the pointer read through the API message
// get agrees with the key-value bucket's own Get on value and revision,
// for a missing, a written, an updated and a deleted key, and refuses a
// key that is not a valid key (a wildcard would read another model's
// pointer).
func TestJetStreamStoreLeaderGet(t *testing.T) {
	s, _ := oneServerStore(t)
	ctx := context.Background()
	check := func(key string) {
		t.Helper()
		val, rev, err := s.leaderGet(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		e, kerr := s.kv.Get(ctx, key)
		switch {
		case errors.Is(kerr, jetstream.ErrKeyNotFound) || errors.Is(kerr, jetstream.ErrKeyDeleted):
			if rev != 0 || val != nil {
				t.Fatalf("%s: revision %d %q, the bucket has none", key, rev, val)
			}
		case kerr != nil:
			t.Fatal(kerr)
		case rev != e.Revision() || string(val) != string(e.Value()):
			t.Fatalf("%s: revision %d %q, the bucket has %d %q", key, rev, val, e.Revision(), e.Value())
		}
	}
	check("m")
	for _, v := range []string{"one", "two"} {
		if _, err := s.kv.Put(ctx, "m", []byte(v)); err != nil {
			t.Fatal(err)
		}
		check("m")
	}
	if _, err := s.kv.Put(ctx, "other/model-1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	check("other/model-1")
	if err := s.kv.Delete(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	check("m")
	if err := s.kv.Purge(ctx, "other/model-1"); err != nil {
		t.Fatal(err)
	}
	check("other/model-1")
	for _, bad := range []string{"", "*", "a.>", "a b", ".a", "a."} {
		if _, _, err := s.leaderGet(ctx, bad); !errors.Is(err, jetstream.ErrInvalidKey) {
			t.Errorf("key %q: %v, want ErrInvalidKey", bad, err)
		}
	}
}

// FuzzDecodeMsgGetReply: any reply bytes give a value and revision or an
// error, never a panic; an entry always has a revision.
func FuzzDecodeMsgGetReply(f *testing.F) {
	f.Add([]byte(`{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"$KV.b.m","seq":3,"data":"eyJ9","time":"2026-01-01T00:00:00Z"}}`))
	f.Add([]byte(`{"error":{"code":404,"err_code":10037,"description":"no message found"}}`))
	f.Add([]byte(`{"error":{"code":503,"err_code":10008,"description":"jetstream not enabled"}}`))
	f.Add([]byte(`{"message":{"seq":4,"hdrs":"TkFUUy8xLjANCktWLU9wZXJhdGlvbjogREVMDQoNCg=="}}`))
	f.Add([]byte(`{"message":{"seq":4,"hdrs":"bm9wZQ=="}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		val, rev, err := decodeMsgGetReply(b)
		if err != nil && (val != nil || rev != 0) {
			t.Fatalf("error %v with a value", err)
		}
		if err == nil && rev == 0 && val != nil {
			t.Fatalf("value %q without a revision", val)
		}
	})
}

// unansweredPuts answers the first fails puts with err, as a put no
// server answered right after a bucket's creation does.
type unansweredPuts struct {
	jetstream.ObjectStore
	err   error
	fails int32
	puts  atomic.Int32
}

func (u *unansweredPuts) PutBytes(ctx context.Context, name string, data []byte) (*jetstream.ObjectInfo, error) {
	if u.puts.Add(1) <= u.fails {
		return nil, u.err
	}
	return u.ObjectStore.PutBytes(ctx, name, data)
}

// TestJetStreamStoreWriteRetries: a put no server answered is tried
// again, up to objectPutAttempts puts; other errors are not retried.
func TestJetStreamStoreWriteRetries(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		fails    int32
		wantPuts int32
		wantOK   bool
	}{
		{"no responders twice", nats.ErrNoResponders, 2, 3, true},
		{"no responders throughout", nats.ErrNoResponders, objectPutAttempts, objectPutAttempts, false},
		{"stream gone: not retried", jetstream.ErrStreamNotFound, 1, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := oneServerStore(t)
			u := &unansweredPuts{ObjectStore: s.obj, err: c.err, fails: c.fails}
			s.obj = u
			err := s.Write("m", []byte("state"))
			if n := u.puts.Load(); n != c.wantPuts {
				t.Errorf("%d puts, want %d", n, c.wantPuts)
			}
			if !c.wantOK {
				if !errors.Is(err, c.err) {
					t.Fatalf("write: %v, want %v", err, c.err)
				}
				if _, err := s.Read("m", snapshot.Current); !errors.Is(err, snapshot.ErrNotFound) {
					t.Fatalf("read after a failed first write: %v, want ErrNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s.Read("m", snapshot.Current); err != nil || string(got) != "state" {
				t.Fatalf("read %q, %v", got, err)
			}
		})
	}
}
