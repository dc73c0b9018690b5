package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/snapshot/jsstore"
	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/natsio"
)

// slot is one model this instance owns, for one epoch.
type slot struct {
	model    string
	instance string
	epoch    uint64        // lease revision won
	rev      atomic.Uint64 // lease revision held now
	deadline atomic.Pointer[time.Time]
	lost     atomic.Bool
	leaving  atomic.Bool // handing over: runner stopping, lease still renewed
	// Set by start and read by drop and handOver, under clusterNode.mu.
	r      *stream.Runner
	cons   jetstream.ConsumeContext
	cancel context.CancelFunc
	done   chan struct{} // closed when the runner has stopped
}

// valid reports whether this owner may still publish, acknowledge or
// snapshot: the lease is not known lost and the local deadline, a safety
// margin before the server could expire the lease, has not passed. The
// deadline is on the monotonic clock, which runs on while the process is
// stopped, so a process resumed past it stops at once.
func (s *slot) valid() bool {
	if s.lost.Load() {
		return false
	}
	d := s.deadline.Load()
	return d != nil && time.Now().Before(*d)
}

// fenced marks the lease lost (a server-side check refused this owner).
func (s *slot) fenced() { s.lost.Store(true) }

// extend sets the deadline from the time a successful renewal was sent:
// the server's expiry is at least ttl after that, the margin ttl/4.
func (s *slot) extend(sent time.Time, ttl time.Duration) {
	d := sent.Add(ttl - ttl/4)
	s.deadline.Store(&d)
}

// Host is what the cluster asks of the daemon that embeds it: build a
// model it has won, hand the model its input, and record which models
// this instance runs (for the page and the queries).
type Host interface {
	// NewRunner builds model m's runner publishing through sink; the
	// cluster sets its snapshot store, restores and runs it.
	NewRunner(m config.ModelConfig, sink stream.Sink, log zerolog.Logger) (*stream.Runner, error)
	// Deliver hands one input message to the model's runner, acknowledged
	// later through ack.
	Deliver(ctx context.Context, r *stream.Runner, msg jetstream.Msg, ack stream.Acker)
	// Owned records (r nil: forgets) the runner of a model this instance
	// owns.
	Owned(model string, r *stream.Runner)
}

// Options are what one instance of a cluster runs with.
type Options struct {
	Cluster config.ClusterConfig
	NATS    config.NATSConfig
	Models  []config.ModelConfig
	// JS, Publisher and Store are the daemon's JetStream context, output
	// publisher and snapshot store.
	JS        jetstream.JetStream
	Publisher *natsio.Publisher
	Store     *jsstore.Store
	Registry  prometheus.Registerer
	Log       zerolog.Logger
	// Serving is called once this instance has announced itself, before
	// it takes any model.
	Serving func(instance string)
}

// clusterNode runs this instance's share of the models.
type clusterNode struct {
	o       Options
	host    Host
	js      jetstream.JetStream
	l       *leases
	sink    *natsio.Publisher
	ttl     time.Duration
	mu      sync.Mutex           // guards slots and the slots' runner fields
	slots   map[string]*slot     // held leases, including models still starting
	unowned map[string]time.Time // control loop only
	met     *clusterMetrics
	log     zerolog.Logger
}

// Run owns, runs and hands over models until ctx ends, then hands every
// owned model over cleanly (snapshot, release).
func Run(ctx context.Context, o Options, host Host) error {
	k := &o.Cluster
	id := k.InstanceName()
	ttl := k.Lease.Duration
	js := o.JS
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	var l *leases
	err := natsio.RetrySetup(sctx, func(actx context.Context) (err error) {
		l, err = newLeases(actx, js, id, ttl, o.NATS.Replicas)
		return err
	})
	if err == nil {
		err = natsio.RetrySetup(sctx, func(actx context.Context) error { return addFenceSubjects(actx, js, o.NATS.Prefix) })
	}
	if err == nil {
		err = l.announce(sctx, nil)
	}
	cancel()
	if err != nil {
		return err
	}
	n := &clusterNode{o: o, host: host, js: js, l: l, sink: o.Publisher, ttl: ttl, slots: map[string]*slot{}, unowned: map[string]time.Time{},
		met: newClusterMetrics(o.Registry), log: o.Log.With().Str("instance", id).Logger()}
	if o.Serving != nil {
		o.Serving(id)
	}
	// Renewals run on their own, so that a slow takeover never delays
	// them towards the safety margin; they go on through the handovers
	// at shutdown.
	rctx, stopRenewing := context.WithCancel(context.Background())
	renewing := make(chan struct{})
	go func() {
		defer close(renewing)
		n.renewLoop(rctx)
	}()
	defer func() {
		stopRenewing()
		<-renewing
	}()
	// The first step waits one period, so that instances started together
	// see each other's announcements before any takes a model.
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			n.leave()
			return nil
		case <-tick.C:
			n.step(ctx)
		}
	}
}

// renewLoop renews the held leases every lease/3 until ctx ends.
func (n *clusterNode) renewLoop(ctx context.Context) {
	t := time.NewTicker(n.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.renewAll(ctx)
		}
	}
}

// addFenceSubjects adds <prefix>.fence.> to the output stream, so that
// fences and outputs share one stream and one expected-sequence check.
func addFenceSubjects(ctx context.Context, js jetstream.JetStream, prefix string) error {
	s, err := js.Stream(ctx, natsio.LatentStream)
	if err != nil {
		return fmt.Errorf("output stream %s: %w", natsio.LatentStream, err)
	}
	cfg := s.CachedInfo().Config
	subj := prefix + ".fence.>"
	if slices.Contains(cfg.Subjects, subj) {
		return nil
	}
	cfg.Subjects = append(cfg.Subjects, subj)
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("adding the fence subjects to %s: %w", natsio.LatentStream, err)
	}
	return nil
}

// step announces this instance and moves models as assign spreads them
// over the live instances: acquiring those assigned to it (or that stayed
// unowned for two leases), handing over those assigned to another live
// instance.
func (n *clusterNode) step(ctx context.Context) {
	began := time.Now()
	n.mu.Lock()
	owned := make([]string, 0, len(n.slots))
	for name := range n.slots {
		owned = append(owned, name)
	}
	n.mu.Unlock()
	slices.Sort(owned)
	actx, cancel := context.WithTimeout(ctx, n.ttl/4)
	_ = n.l.announce(actx, owned)
	members, err := n.l.live(actx)
	cancel()
	if err != nil {
		return
	}
	names := make([]string, len(n.o.Models))
	for i, m := range n.o.Models {
		names[i] = m.Name
	}
	plan := assign(names, members)
	for i := range n.o.Models {
		m := &n.o.Models[i]
		pref := plan[m.Name]
		n.mu.Lock()
		s := n.slots[m.Name]
		if s != nil && pref != n.l.id && !s.leaving.Load() && s.r != nil {
			n.handOver(s)
		}
		n.mu.Unlock()
		if s != nil {
			continue
		}
		if pref != n.l.id {
			if !n.orphan(ctx, m.Name) {
				continue
			}
		}
		// Takeovers are sequential and each restores a snapshot: past
		// this budget the rest wait for the next step.
		if time.Since(began) > n.ttl/4 {
			continue
		}
		n.acquire(ctx, *m)
	}
}

// orphan reports a model no instance has held for two leases (its
// preferred instance is announced but not taking it).
func (n *clusterNode) orphan(ctx context.Context, model string) bool {
	octx, cancel := context.WithTimeout(ctx, n.ttl/4)
	owner, err := n.l.owner(octx, model)
	cancel()
	if err != nil || owner != "" {
		delete(n.unowned, model)
		return false
	}
	since, ok := n.unowned[model]
	if !ok {
		n.unowned[model] = time.Now()
		return false
	}
	return time.Since(since) > 2*n.ttl
}

// renewAll renews every held lease, drops those lost, and releases those
// whose handover has finished.
func (n *clusterNode) renewAll(ctx context.Context) {
	n.mu.Lock()
	held := make([]*slot, 0, len(n.slots))
	for _, s := range n.slots {
		held = append(held, s)
	}
	n.mu.Unlock()
	for _, s := range held {
		if s.leaving.Load() && closed(s.done) {
			rctx, cancel := context.WithTimeout(ctx, n.ttl/4)
			err := n.l.release(rctx, s.model, s.rev.Load())
			cancel()
			n.mu.Lock()
			n.forget(s)
			n.mu.Unlock()
			n.met.handovers.WithLabelValues("released").Inc()
			n.log.Info().Str("model", s.model).Uint64("epoch", s.epoch).AnErr("release", err).Msg("model handed over")
			continue
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, n.ttl/4)
		rev, err := n.l.renew(rctx, s.model, s.rev.Load())
		cancel()
		if err == nil && !s.lost.Load() {
			s.rev.Store(rev)
			s.extend(sent, n.ttl)
			n.met.renewals.WithLabelValues("ok").Inc()
			continue
		}
		n.met.renewals.WithLabelValues("failed").Inc()
		if errors.Is(err, errLeaseHeld) || s.lost.Load() || !s.valid() {
			n.mu.Lock()
			n.drop(s, err)
			n.mu.Unlock()
		} else {
			n.log.Warn().Err(err).Str("model", s.model).Msg("lease renewal failed; retrying until the safety margin")
		}
	}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// forget removes a slot from this instance (n.mu held).
func (n *clusterNode) forget(s *slot) {
	if n.slots[s.model] == s {
		delete(n.slots, s.model)
		n.host.Owned(s.model, nil)
	}
	n.met.owned.Set(float64(len(n.slots)))
}

// drop stops a model whose lease is lost: nothing more is published,
// acknowledged or snapshotted (the gates close first), and its runner
// stops in the background (n.mu held). The epoch's consumer is deleted
// in the background too (deleteOwnConsumer).
func (n *clusterNode) drop(s *slot, why error) {
	n.stopSlot(s)
	n.met.handovers.WithLabelValues("lost").Inc()
	n.log.Error().AnErr("renewal", why).Str("model", s.model).Uint64("epoch", s.epoch).Msg("model lease lost: stopped working on it")
	go n.deleteOwnConsumer(s)
}

// stopSlot closes a slot's gates (nothing more is published,
// acknowledged or snapshotted), stops its consumer and runner and
// forgets it (n.mu held).
func (n *clusterNode) stopSlot(s *slot) {
	s.fenced()
	if s.cons != nil {
		s.cons.Stop()
	}
	if s.cancel != nil {
		s.cancel()
	}
	n.forget(s)
}

// handOver starts a clean handover: stop pulling, let the runner
// snapshot and acknowledge (the lease is still renewed meanwhile), then
// release (in renewAll, once the runner has stopped). n.mu held; the
// slot has started.
func (n *clusterNode) handOver(s *slot) {
	s.leaving.Store(true)
	s.cons.Stop()
	s.cancel()
	n.log.Info().Str("model", s.model).Uint64("epoch", s.epoch).Msg("handing model over")
}

// leave hands every model over at shutdown (the renewals go on
// meanwhile) and withdraws this instance.
func (n *clusterNode) leave() {
	n.mu.Lock()
	for _, s := range n.slots {
		if !s.leaving.Load() && s.r != nil {
			n.handOver(s)
		}
	}
	n.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n.mu.Lock()
		left := len(n.slots)
		n.mu.Unlock()
		if left == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.mu.Lock()
	for _, s := range n.slots {
		n.drop(s, errors.New("shutdown: the model was not handed over in 30s"))
	}
	n.mu.Unlock()
	wctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	n.l.withdraw(wctx)
	cancel()
}

// acquire wins a model's lease and starts it; on failure the lease is
// released for another instance.
func (n *clusterNode) acquire(ctx context.Context, m config.ModelConfig) {
	sent := time.Now()
	actx, cancel := context.WithTimeout(ctx, n.ttl/4)
	epoch, err := n.l.acquire(actx, m.Name)
	cancel()
	if err != nil {
		if !errors.Is(err, errLeaseHeld) {
			n.log.Warn().Err(err).Str("model", m.Name).Msg("lease not acquired")
		}
		return
	}
	delete(n.unowned, m.Name)
	s := &slot{model: m.Name, instance: n.l.id, epoch: epoch, done: make(chan struct{})}
	s.rev.Store(epoch)
	s.extend(sent, n.ttl)
	// Held from now on: renewed while it starts.
	n.mu.Lock()
	n.slots[m.Name] = s
	n.mu.Unlock()
	err = n.start(ctx, s, m)
	n.mu.Lock()
	defer n.mu.Unlock()
	if err == nil && s.lost.Load() {
		err = errLeaseLost
	}
	if errors.Is(err, errLeaseLost) {
		n.drop(s, err)
		return
	}
	if err != nil {
		// The lease is held: stop what started, release it for another
		// instance (or this one at its next step).
		n.stopSlot(s)
		n.met.handovers.WithLabelValues("failed").Inc()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.ttl/4)
		rerr := n.l.release(rctx, m.Name, s.rev.Load())
		cancel()
		n.log.Error().Err(err).AnErr("release", rerr).Str("model", m.Name).Uint64("epoch", s.epoch).Msg("model not started; lease released")
		go n.deleteOwnConsumer(s)
		return
	}
	n.host.Owned(m.Name, s.r)
	n.met.owned.Set(float64(len(n.slots)))
	took := time.Since(sent)
	n.met.handovers.WithLabelValues("acquired").Inc()
	n.met.takeover.Observe(took.Seconds())
	n.log.Info().Str("model", m.Name).Uint64("epoch", epoch).Uint64("applied", s.r.Applied()).Dur("took", took).Msg("model acquired")
}

// fence is the payload of a fence message.
type fence struct {
	Instance string `json:"instance"`
	Epoch    uint64 `json:"epoch"`
}

// start deletes the previous owner's consumer, fences its outputs,
// restores the model from its JetStream snapshot, claims the snapshot
// pointer, binds this epoch's consumer after the state and starts the
// runner. The steps that act on what a successor would own (consumers,
// fence, snapshot pointer) run only while the lease holds: an instance
// paused mid-takeover past its lease must not, on resuming, delete its
// successor's consumer, fence it or claim its snapshot pointer.
func (n *clusterNode) start(ctx context.Context, s *slot, m config.ModelConfig) error {
	sink := newFencedSink(n.sink, s, n.o.NATS.Prefix+".fence."+m.Name)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !s.valid() {
		return errLeaseLost
	}
	if err := n.dropConsumers(sctx, s, m.Name); err != nil {
		return fmt.Errorf("previous consumers: %w", err)
	}
	// A repeated fence is harmless: outputs expect the last one's
	// sequence.
	fb, _ := json.Marshal(fence{Instance: s.instance, Epoch: s.epoch})
	err := n.attempt(sctx, s, func(actx context.Context) error {
		ack, err := n.js.Publish(actx, sink.fenceSubj, fb)
		if err == nil {
			sink.fenceSeq = ack.Sequence
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	r, err := n.host.NewRunner(m, sink, n.o.Log.With().Uint64("epoch", s.epoch).Logger())
	if err != nil {
		return err
	}
	r.SetStore(gatedStore{Store: n.o.Store, slot: s})
	if err := r.Restore(sctx); err != nil {
		return err
	}
	if !s.valid() {
		return errLeaseLost
	}
	if err := n.o.Store.Claim(m.Name); err != nil {
		return err
	}
	if !s.valid() {
		return errLeaseLost
	}
	cons, err := n.bindOwned(sctx, r, s)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	rctx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(s.done)
		go sink.run(ran)
		_ = r.Run(rctx)
		close(ran)
	}()
	cc, err := cons.Consume(func(msg jetstream.Msg) { n.host.Deliver(rctx, r, msg, gatedAck{msg: msg, slot: s}) },
		natsio.PullBuffer())
	n.mu.Lock()
	s.r, s.cancel, s.cons = r, stop, cc
	n.mu.Unlock()
	if err != nil {
		stop()
	}
	return err
}

// bindOwned creates this epoch's consumer for the model right after its
// state.
func (n *clusterNode) bindOwned(ctx context.Context, r *stream.Runner, s *slot) (jetstream.Consumer, error) {
	c := &n.o.NATS
	subj := c.Prefix + ".obs." + r.Name()
	st, err := n.js.Stream(ctx, natsio.ObsStream)
	if err != nil {
		return nil, err
	}
	if err := r.BindInputStream(natsio.ObsStream, st.CachedInfo().Created); err != nil {
		return nil, err
	}
	cfg := jetstream.ConsumerConfig{Durable: epochConsumer(r.Name(), s.epoch), FilterSubject: subj,
		AckPolicy: jetstream.AckAllPolicy, AckWait: c.AckWait.Duration, MaxAckPending: c.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy, MaxDeliver: -1, InactiveThreshold: 10 * n.ttl}
	if after := r.Applied(); after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	var cons jetstream.Consumer
	err = natsio.RetrySetup(ctx, func(actx context.Context) (err error) {
		cons, err = st.CreateOrUpdateConsumer(actx, cfg)
		return err
	})
	return cons, err
}
