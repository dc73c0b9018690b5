package cluster

import (
	"context"
	"errors"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Directory answers which instance runs a model, from the lease bucket:
// the page and the queries of every instance use it to say, or to ask,
// where a model they do not run lives.
type Directory struct {
	js jetstream.JetStream
	mu sync.Mutex
	kv jetstream.KeyValue // bound at the first lookup that finds the bucket
}

// NewDirectory reads the leases through js.
func NewDirectory(js jetstream.JetStream) *Directory { return &Directory{js: js} }

// Owner returns the instance holding model's lease, "" when none does.
func (d *Directory) Owner(ctx context.Context, model string) (string, error) {
	d.mu.Lock()
	kv := d.kv
	d.mu.Unlock()
	if kv == nil {
		b, err := d.js.KeyValue(ctx, ownersBucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		d.mu.Lock()
		d.kv, kv = b, b
		d.mu.Unlock()
	}
	e, err := kv.Get(ctx, model)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(e.Value()), nil
}
