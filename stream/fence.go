package stream

import (
	"errors"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/snapshot"
)

// errLeaseLost reports work refused because this instance no longer
// holds the model's lease (or can no longer be sure it does).
var errLeaseLost = errors.New("the model's lease is lost or about to expire")

// Output headers naming who published an output (outputs keep their
// deterministic Nats-Msg-Id; these only say which owner sent a copy).
const (
	InstanceHeader = "Dcgpd-Instance"
	EpochHeader    = "Dcgpd-Epoch"
)

// isFenceError reports a publish the server refused because its expected
// last sequence on the fence subject no longer holds: another owner has
// published a newer fence. (10071 on a single server, 10164 on a
// replicated stream.)
func isFenceError(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == 10164
	}
	return false
}

// fencedSink publishes one owned model's outputs. Every output carries
// the expected last sequence of the model's fence subject as this owner
// left it: once a successor publishes its own fence, the server refuses
// every output of this owner. Nothing at all is sent once the owner's
// local lease deadline has passed.
type fencedSink struct {
	base      *natsSink
	slot      *slot
	fenceSubj string
	fenceSeq  uint64
}

func (f *fencedSink) Publish(subject, msgID string, data []byte, done func(error)) {
	if !f.slot.valid() {
		done(errLeaseLost)
		return
	}
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	m.Header.Set(InstanceHeader, f.slot.instance)
	m.Header.Set(EpochHeader, strconv.FormatUint(f.slot.epoch, 10))
	fut, err := f.base.js.PublishMsgAsync(m, jetstream.WithMsgID(msgID),
		jetstream.WithExpectLastSequenceForSubject(f.fenceSeq, f.fenceSubj))
	if err != nil {
		done(err)
		return
	}
	f.base.pending <- pendingPub{fut: fut, done: func(err error) {
		if isFenceError(err) {
			f.slot.fenced()
		}
		done(err)
	}}
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
	*JetStreamStore
	slot *slot
}

func (g gatedStore) Write(name string, data []byte) error {
	if !g.slot.valid() {
		return errLeaseLost
	}
	err := g.JetStreamStore.Write(name, data)
	if errors.Is(err, ErrFenced) {
		g.slot.fenced()
	}
	return err
}

var _ snapshot.Store = gatedStore{}
