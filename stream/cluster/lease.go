package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Ownership bucket names.
const (
	ownersBucket  = "dcgp_owners"  // model -> owning instance; revision = epoch
	membersBucket = "dcgp_members" // instance -> announcement
)

// leases holds the model leases and the member announcements. Both
// buckets expire a key one lease after its last write (bucket TTL, not a
// per-key TTL: KV Update does not carry a per-key TTL, so a renewal by
// Update would make a per-key lease immortal). A lease is won by Create
// and renewed by Update at the revision this instance holds; the
// revision it won is the owner's epoch.
type leases struct {
	owners, members jetstream.KeyValue
	id              string
	ttl             time.Duration
}

func newLeases(ctx context.Context, js jetstream.JetStream, id string, ttl time.Duration, replicas int) (*leases, error) {
	owners, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ownersBucket, History: 1, TTL: ttl,
		Replicas: replicas, Storage: jetstream.FileStorage, Description: "dcgpd model leases"})
	if err != nil {
		return nil, fmt.Errorf("key-value bucket %s: %w", ownersBucket, err)
	}
	members, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: membersBucket, History: 1, TTL: ttl,
		Replicas: replicas, Storage: jetstream.FileStorage, Description: "live dcgpd instances"})
	if err != nil {
		return nil, fmt.Errorf("key-value bucket %s: %w", membersBucket, err)
	}
	return &leases{owners: owners, members: members, id: id, ttl: ttl}, nil
}

// errLeaseHeld reports a lease another instance holds (or took over).
var errLeaseHeld = errors.New("lease held by another instance")

// acquire creates the model's lease; the revision is the epoch.
func (l *leases) acquire(ctx context.Context, model string) (uint64, error) {
	rev, err := l.owners.Create(ctx, model, []byte(l.id))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, errLeaseHeld
	}
	return rev, err
}

// renew moves the lease on from rev; a revision mismatch means the lease
// expired (and may have been won by another instance).
func (l *leases) renew(ctx context.Context, model string, rev uint64) (uint64, error) {
	n, err := l.owners.Update(ctx, model, []byte(l.id), rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, errLeaseHeld
	}
	return n, err
}

// release deletes the lease if this instance still holds it at rev.
func (l *leases) release(ctx context.Context, model string, rev uint64) error {
	return l.owners.Delete(ctx, model, jetstream.LastRevision(rev))
}

// owner returns the instance holding a model's lease ("" if none).
func (l *leases) owner(ctx context.Context, model string) (string, error) {
	e, err := l.owners.Get(ctx, model)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(e.Value()), nil
}

// announce writes this instance's member key (renewing its expiry).
func (l *leases) announce(ctx context.Context, owned []string) error {
	b, _ := json.Marshal(struct {
		Owned []string `json:"owned"`
		At    string   `json:"at"`
	}{owned, time.Now().UTC().Format(time.RFC3339Nano)})
	_, err := l.members.Put(ctx, l.id, b)
	return err
}

// withdraw removes this instance's member key (at shutdown).
func (l *leases) withdraw(ctx context.Context) { _ = l.members.Delete(ctx, l.id) }

// live lists the announced instances, sorted, with this one included.
func (l *leases) live(ctx context.Context) ([]string, error) {
	keys, err := l.members.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for k := range keys.Keys() {
		out = append(out, k)
	}
	if !slices.Contains(out, l.id) {
		out = append(out, l.id)
	}
	slices.Sort(out)
	return out, nil
}

// assign spreads models over members: each model, in name order, goes
// to the member ranking highest for it by rendezvous hashing (the
// highest hash of member and model) among those not yet full, so that
// the loads differ by at most one. Every instance computes the same
// assignment from the same live list. A member joining or leaving moves
// its own models and, through the load bound, a few others.
func assign(models, members []string) map[string]string {
	out := make(map[string]string, len(models))
	if len(members) == 0 {
		return out
	}
	sorted := slices.Clone(models)
	slices.Sort(sorted)
	// Loads are floor or floor+1; only len(models) mod len(members)
	// members may reach floor+1.
	floor, extra := len(models)/len(members), len(models)%len(members)
	load := map[string]int{}
	full := 0 // members at floor+1
	for _, m := range sorted {
		ranked := slices.Clone(members)
		slices.SortFunc(ranked, func(a, b string) int {
			ha, hb := weight(a, m), weight(b, m)
			switch {
			case ha > hb:
				return -1
			case ha < hb:
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, mem := range ranked {
			l := load[mem]
			if l < floor || l == floor && full < extra {
				if l == floor {
					full++
				}
				out[m] = mem
				load[mem]++
				break
			}
		}
	}
	return out
}

// weight is the rendezvous hash of a member and a model.
func weight(member, model string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(model))
	// FNV's last bytes mix weakly; a final avalanche spreads them.
	return mix64(h.Sum64())
}

// mix64 is the splitmix64 finaliser.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
