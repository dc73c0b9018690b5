package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/snapshot"
	"github.com/dcgpd/dcgpd/snapshot/jsstore"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// errLeaseLost reports work refused because this instance no longer
// holds the model's lease (or can no longer be sure it does).
var errLeaseLost = errors.New("the model's lease is lost or about to expire")

// fencedSink publishes one owned model's outputs. Every output carries
// the expected last sequence of the model's fence subject as this owner
// left it: once a successor publishes its own fence, the server refuses
// every output of this owner. Nothing at all is sent once the owner's
// local lease deadline has passed.
//
// Outputs of one model go one at a time: a replicated stream refuses an
// expected-sequence publish while another on the same subject is in
// flight (nats-server jetstream_batching.go, "last sequence by subject
// mismatch"; measured: 997 of 1000 pipelined fenced publishes refused on
// R3). Models still publish in parallel, each on its own fence subject.
type fencedSink struct {
	base      *natsio.Publisher
	slot      *slot
	fenceSubj string
	fenceSeq  uint64
	queue     chan fencedOut
}

type fencedOut struct {
	msg  *nats.Msg
	id   string
	done func(error)
}

func newFencedSink(base *natsio.Publisher, s *slot, fenceSubj string) *fencedSink {
	return &fencedSink{base: base, slot: s, fenceSubj: fenceSubj, queue: make(chan fencedOut, 8192)}
}

func (f *fencedSink) Publish(subject, msgID string, data []byte, done func(error)) {
	if !f.slot.valid() {
		done(errLeaseLost)
		return
	}
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	m.Header.Set(wire.InstanceHeader, f.slot.instance)
	m.Header.Set(wire.EpochHeader, strconv.FormatUint(f.slot.epoch, 10))
	f.queue <- fencedOut{msg: m, id: msgID, done: done}
}

// run sends the queued outputs in order until the runner has stopped
// (stop closed) and the queue is empty.
func (f *fencedSink) run(stop <-chan struct{}) {
	for {
		select {
		case o := <-f.queue:
			f.send(o)
		case <-stop:
			for {
				select {
				case o := <-f.queue:
					f.send(o)
				default:
					return
				}
			}
		}
	}
}

// send publishes one output, again after a timeout or lost connection,
// until the server stores it, refuses it as fenced, or the lease ends.
func (f *fencedSink) send(o fencedOut) {
	wait := 50 * time.Millisecond
	for {
		if !f.slot.valid() {
			o.done(errLeaseLost)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := f.base.JetStream().PublishMsg(ctx, o.msg, jetstream.WithMsgID(o.id),
			jetstream.WithExpectLastSequenceForSubject(f.fenceSeq, f.fenceSubj))
		cancel()
		if err == nil {
			o.done(nil)
			return
		}
		if natsio.IsFenceError(err) {
			f.slot.fenced()
			o.done(err)
			return
		}
		f.base.Retrying(err)
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

func (f *fencedSink) Latest(model string, data []byte) {
	if f.slot.valid() {
		f.base.Latest(model, data)
	}
}

func (f *fencedSink) Reject(model string, data []byte) {
	if f.slot.valid() {
		f.base.Reject(model, data)
	}
}

// gatedAck acknowledges only while the owner's lease holds. The consumer
// it acknowledges on is this owner's own (named by its epoch), which a
// successor deletes before it reads: an acknowledgement that slips past
// the gate lands on no consumer.
type gatedAck struct {
	msg  jetstream.Msg
	slot *slot
}

func (a gatedAck) Ack() error {
	if !a.slot.valid() {
		return errLeaseLost
	}
	return a.msg.Ack()
}

// gatedStore writes snapshots only while the owner's lease holds; the
// JetStream store's compare-and-set refuses a write after a successor
// claimed the model.
type gatedStore struct {
	*jsstore.Store
	slot *slot
}

func (g gatedStore) Write(name string, data []byte) error {
	if !g.slot.valid() {
		return errLeaseLost
	}
	err := g.Store.Write(name, data)
	if errors.Is(err, jsstore.ErrFenced) {
		g.slot.fenced()
	}
	return err
}

var _ snapshot.Store = gatedStore{}

// epochConsumer names an owner's input consumer for one epoch: no other
// owner of the model ever uses the name.
func epochConsumer(model string, epoch uint64) string {
	return "dcgpd_" + model + "_e" + strconv.FormatUint(epoch, 10)
}

// isModelConsumer reports whether a consumer name is one of the model's:
// an epoch's (dcgpd_<model>_e<epoch>) or a single instance's
// (dcgpd_<model>).
func isModelConsumer(name, model string) bool {
	rest, ok := strings.CutPrefix(name, "dcgpd_"+model)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	digits, ok := strings.CutPrefix(rest, "_e")
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// dropConsumers deletes the model's consumers (a previous owner's): its
// acknowledgements then land on no consumer. It runs before the fence,
// so that whatever arrives after the fence from the previous owner is
// refused or void.
//
// It lists consumer names, which the meta leader answers from its
// assignments, not consumer infos: in a cluster the server gathers those
// from each consumer's leader and, after 4 s, leaves out any that has not
// answered (nats-server jsClusteredConsumerListRequest reports them as
// "missing", which the client drops), so a busy cluster could hide the
// previous owner's consumer from a listing by info. The names are
// collected before any is deleted: the listing pages by offset.
//
// Each request is an attempt of at most 3 s, repeated while the lease
// holds: with a server down, a request the cluster does not answer (its
// meta leader being re-elected, say) is sent again rather than waited for
// until the takeover's deadline.
func (n *clusterNode) dropConsumers(ctx context.Context, s *slot, model string) error {
	var names []string
	err := n.attempt(ctx, s, func(actx context.Context) error {
		st, err := n.js.Stream(actx, natsio.ObsStream)
		if err != nil {
			return err
		}
		lister := st.ConsumerNames(actx)
		names = names[:0]
		for name := range lister.Name() {
			if isModelConsumer(name, model) {
				names = append(names, name)
			}
		}
		if err := lister.Err(); err != nil {
			return fmt.Errorf("listing consumers: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range names {
		err := n.attempt(ctx, s, func(actx context.Context) error {
			err := n.js.DeleteConsumer(actx, natsio.ObsStream, name)
			if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				return fmt.Errorf("deleting consumer %s: %w", name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// attempt runs one JetStream request of a takeover in attempts of at most
// 3 s until it succeeds, fails otherwise than by timing out, ctx ends or
// the lease is lost (errLeaseLost).
func (n *clusterNode) attempt(ctx context.Context, s *slot, req func(context.Context) error) error {
	return natsio.RetrySetup(ctx, func(actx context.Context) error {
		if !s.valid() {
			return errLeaseLost
		}
		err := req(actx)
		if err != nil && actx.Err() != nil && ctx.Err() == nil {
			// A request cut short by the attempt's deadline, whatever
			// error the client reported for it: try again.
			return context.DeadlineExceeded
		}
		return err
	})
}

// deleteOwnConsumer deletes a lost epoch's consumer, retrying for up to
// two leases. The successor deleted the model's consumers before its
// fence, but one this owner was still creating then (stopped between its
// fence and binding its consumer, say) lands after that deletion and
// would otherwise stay until the server's inactive threshold (ten
// leases). The gates are closed already: nothing of this epoch is
// acknowledged on it.
func (n *clusterNode) deleteOwnConsumer(s *slot) {
	name := epochConsumer(s.model, s.epoch)
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.ttl)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, n.ttl/2)
		err := n.js.DeleteConsumer(actx, natsio.ObsStream, name)
		acancel()
		if err == nil || errors.Is(err, jetstream.ErrConsumerNotFound) {
			return
		}
		if ctx.Err() != nil || errors.Is(err, nats.ErrConnectionClosed) {
			n.log.Warn().Err(err).Str("consumer", name).Msg("a lost epoch's consumer not deleted; the server removes it after ten idle leases")
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
