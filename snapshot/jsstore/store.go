package jsstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/snapshot"
)

// ErrFenced reports a write refused because another instance moved the
// model's state on since this one read it: this instance is no longer the
// model's owner and must stop working on it.
var ErrFenced = errors.New("fenced: another instance wrote this model's state")

// Snapshot bucket names.
const (
	snapPointerBucket = "dcgp_snapshots"     // key-value: model -> jsPointer
	snapObjectBucket  = "dcgp_snapshot_data" // object store: the snapshot bytes
)

// Store keeps snapshots in JetStream, so any instance of a
// cluster can restore a model another one ran. The bytes go to an object
// store under a name unique to each write (an object store Put has no
// compare-and-set, so a stale writer must never overwrite a name in use);
// a key-value pointer per model names the current and previous objects
// with their SHA-256, and moves only by compare-and-set on the revision
// this instance last read or wrote. A second writer is therefore refused
// (ErrFenced) as soon as another has moved the pointer, and its object is
// removed. It is a package of its own, not part of package snapshot,
// because snapshot stays free of NATS.
type Store struct {
	js        jetstream.JetStream
	apiPrefix string // of js's API requests, for the pointer reads
	kv        jetstream.KeyValue
	obj       jetstream.ObjectStore
	timeout   time.Duration

	mu   sync.Mutex
	seen map[string]seenPointer // per model
}

// seenPointer is the pointer this instance last read or wrote.
type seenPointer struct {
	p   jsPointer
	rev uint64
}

// jsPointer is a model's pointer value.
type jsPointer struct {
	Current  *jsObject `json:"current,omitempty"`
	Previous *jsObject `json:"previous,omitempty"`
}

type jsObject struct {
	Name   string `json:"name"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

// New creates or binds the pointer bucket and object store
// with the given replicas. While a cluster is still learning its peers it
// refuses a replicated stream ("no suitable peers for placement"): the
// creation is tried again until ctx ends.
func New(ctx context.Context, js jetstream.JetStream, replicas int) (*Store, error) {
	var kv jetstream.KeyValue
	err := untilPlaced(ctx, func() (err error) {
		kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: snapPointerBucket, History: 1,
			Replicas: replicas, Storage: jetstream.FileStorage, Description: "dcgpd snapshot pointer per model"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("key-value bucket %s: %w", snapPointerBucket, err)
	}
	var obj jetstream.ObjectStore
	err = untilPlaced(ctx, func() (err error) {
		obj, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: snapObjectBucket,
			Replicas: replicas, Storage: jetstream.FileStorage, Description: "dcgpd snapshots"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", snapObjectBucket, err)
	}
	if replicas > 1 {
		// A replicated stream just created or recreated takes writes only
		// once its leader is elected; before that a put gets "no
		// responders", so the first snapshot would fail.
		for _, name := range []string{"KV_" + snapPointerBucket, "OBJ_" + snapObjectBucket} {
			if err := waitStreamLeader(ctx, js, name, 10*time.Second); err != nil {
				return nil, err
			}
		}
	}
	return &Store{js: js, apiPrefix: apiPrefixOf(js), kv: kv, obj: obj, timeout: 30 * time.Second,
		seen: map[string]seenPointer{}}, nil
}

// jsNoSuitablePeers is the JetStream API error code of a stream the
// cluster cannot place on enough peers.
const jsNoSuitablePeers = 10005

// untilPlaced runs create until it returns anything but "no suitable
// peers", or ctx ends (the error then wraps the last one and ctx's).
func untilPlaced(ctx context.Context, create func() error) error {
	for {
		err := create()
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsNoSuitablePeers {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (the cluster still had too few peers when %w)", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitStreamLeader waits until the stream has an elected leader, at most
// limit (or until ctx ends).
func waitStreamLeader(ctx context.Context, js jetstream.JetStream, name string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		st, err := js.Stream(ctx, name)
		if err == nil {
			info, ierr := st.Info(ctx)
			if ierr == nil && info.Cluster != nil && info.Cluster.Leader != "" {
				return nil
			}
			err = ierr
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s has no leader after %v (last error: %v): %w", name, limit, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// decodePointer parses and checks a pointer value: each entry names an
// object with a size and a 64-digit hex SHA-256.
func decodePointer(b []byte) (jsPointer, error) {
	var p jsPointer
	if err := json.Unmarshal(b, &p); err != nil {
		return jsPointer{}, fmt.Errorf("%w: %v", snapshot.ErrCorrupt, err)
	}
	for _, o := range []*jsObject{p.Current, p.Previous} {
		if o == nil {
			continue
		}
		if _, err := hex.DecodeString(o.SHA256); err != nil || len(o.SHA256) != 64 || o.Name == "" || o.Size < 0 {
			return jsPointer{}, fmt.Errorf("%w: pointer entry %q: needs a name, a size >= 0 and a hex SHA-256", snapshot.ErrCorrupt, o.Name)
		}
	}
	return p, nil
}

// Read implements snapshot.Store. Reading the current generation also
// records the pointer's revision: the next Write must find it unchanged.
// The pointer comes from the bucket's stream leader and an object a
// replica gives incomplete is read again (read.go), so a read
// right after a write on another server sees that write whole.
func (s *Store) Read(name string, g snapshot.Generation) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	p, rev, err := s.pointer(ctx, name)
	if err != nil {
		return nil, err
	}
	if g == snapshot.Current {
		s.mu.Lock()
		s.seen[name] = seenPointer{p, rev}
		s.mu.Unlock()
	}
	o := p.Current
	if g == snapshot.Previous {
		o = p.Previous
	}
	if o == nil {
		return nil, fmt.Errorf("%w: %s %s in %s", snapshot.ErrNotFound, name, g, snapPointerBucket)
	}
	return s.readObject(ctx, name, g, o)
}

// Write implements snapshot.Store: put the bytes under a new name, then
// move the pointer by compare-and-set; on a conflict the object is
// removed and the error wraps ErrFenced.
func (s *Store) Write(name string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	s.mu.Lock()
	seen, known := s.seen[name]
	s.mu.Unlock()
	if !known {
		// Written before read: take the pointer as it is now.
		p, rev, err := s.pointer(ctx, name)
		if err != nil {
			return err
		}
		seen = seenPointer{p, rev}
	}
	p, rev := seen.p, seen.rev
	obj := jsObject{Name: objectName(name), Size: len(data)}
	sum := sha256.Sum256(data)
	obj.SHA256 = hex.EncodeToString(sum[:])
	if err := s.putObject(ctx, obj.Name, data); err != nil {
		return err
	}
	dropped := p.Previous
	np := jsPointer{Current: &obj, Previous: p.Current}
	next, _ := json.Marshal(np)
	var err error
	var nrev uint64
	if rev == 0 {
		nrev, err = s.kv.Create(ctx, name, next)
	} else {
		nrev, err = s.kv.Update(ctx, name, next, rev)
	}
	if err != nil {
		_ = s.obj.Delete(ctx, obj.Name)
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return fmt.Errorf("snapshot of %s at pointer revision %d: %w", name, rev, ErrFenced)
		}
		return fmt.Errorf("snapshot pointer of %s: %w", name, err)
	}
	s.mu.Lock()
	s.seen[name] = seenPointer{np, nrev}
	s.mu.Unlock()
	if dropped != nil {
		_ = s.obj.Delete(ctx, dropped.Name) // best effort: an orphan only costs space
	}
	return nil
}

// putObject puts data under name. A put that no server answered is tried
// again a few times: right after a replicated bucket is created, or its
// stream leader changes, the servers may not yet know who answers it, and
// nats.go's object put (unlike a plain publish) does not retry that. Such
// a put has committed nothing: its chunks are purged and no metadata was
// written, so the name is still unused.
func (s *Store) putObject(ctx context.Context, name string, data []byte) error {
	wait := objectRetryFirst
	for attempt := 1; ; attempt++ {
		_, err := s.obj.PutBytes(ctx, name, data)
		if err == nil {
			return nil
		}
		if !errors.Is(err, nats.ErrNoResponders) || attempt == objectPutAttempts {
			return fmt.Errorf("snapshot object %s (put %d of at most %d): %w", name, attempt, objectPutAttempts, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("snapshot object %s: %v, and no time left to put it again: %w", name, err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, objectRetryMax)
	}
}

// objectPutAttempts bounds the puts of one object that no server answered.
const objectPutAttempts = 6

// objectName is unique per write: the model, the time and 8 random bytes.
func objectName(model string) string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s/%d-%s", model, time.Now().UnixNano(), hex.EncodeToString(r[:]))
}

// Claim moves a model's pointer to a new revision without changing what
// it names (creating an empty pointer if there is none), from the
// revision this instance last read: a new owner calls it right after its
// restore, so that a previous owner's later Write is refused even if the
// new one has not written a snapshot yet.
func (s *Store) Claim(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	s.mu.Lock()
	seen, known := s.seen[name]
	s.mu.Unlock()
	if !known {
		return fmt.Errorf("snapshot pointer of %s: claimed before it was read", name)
	}
	val, _ := json.Marshal(seen.p)
	var rev uint64
	var err error
	if seen.rev == 0 {
		rev, err = s.kv.Create(ctx, name, val)
	} else {
		rev, err = s.kv.Update(ctx, name, val, seen.rev)
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return fmt.Errorf("claiming the snapshot of %s: %w", name, ErrFenced)
		}
		return fmt.Errorf("claiming the snapshot of %s: %w", name, err)
	}
	s.mu.Lock()
	s.seen[name] = seenPointer{seen.p, rev}
	s.mu.Unlock()
	return nil
}
