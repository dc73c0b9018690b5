package natsio

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/internal/ratelimit"
)

// Publisher publishes a daemon's outputs: estimates to JetStream (acks
// awaited asynchronously, in order), latest estimates to the key-value
// bucket, rejections on plain subjects.
type Publisher struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	prefix  string
	pending chan pendingPub
	done    chan struct{} // closed when awaitAcks has run every callback
	closing atomic.Bool
	retries atomic.Int64
	limit   *ratelimit.Limiter
	log     zerolog.Logger
	// Duplicates (duplicates.go).
	expectDup     func(subject string) bool
	dupExpected   atomic.Int64
	dupUnexpected atomic.Int64
	dupLimit      *ratelimit.Limiter
}

// failedFuture stands for a publication that could not be sent at all.
type failedFuture struct {
	jetstream.PubAckFuture
	msg *nats.Msg
	err error
}

func (f failedFuture) Ok() <-chan *jetstream.PubAck { return nil }
func (f failedFuture) Err() <-chan error {
	c := make(chan error, 1)
	c <- f.err
	return c
}
func (f failedFuture) Msg() *nats.Msg { return f.msg }

type pendingPub struct {
	fut  jetstream.PubAckFuture
	done func(error)
	// dupExpected: a duplicate is expected for this output (a replay,
	// or it was sent again after an unconfirmed attempt).
	dupExpected bool
}

// NewPublisher starts a publisher on nc; Close stops it.
func NewPublisher(nc *nats.Conn, js jetstream.JetStream, prefix string, log zerolog.Logger) *Publisher {
	s := &Publisher{nc: nc, js: js, prefix: prefix, pending: make(chan pendingPub, 4096), done: make(chan struct{}), log: log,
		limit: ratelimit.New(5, time.Minute), dupLimit: ratelimit.New(5, time.Minute)}
	go s.awaitAcks()
	return s
}

// awaitAcks resolves publish futures in order and runs their callbacks.
// A publication the server did not confirm (a timeout while it restarts,
// a lost connection) is sent again with the same id until it is stored
// or the sink closes, so outputs are stored in order and none is skipped.
func (s *Publisher) awaitAcks() {
	defer close(s.done)
	for p := range s.pending {
		wait := 50 * time.Millisecond
		for {
			var err error
			select {
			case ack := <-p.fut.Ok():
				s.checkDuplicate(p, ack)
			case err = <-p.fut.Err():
			}
			// A fenced output (another owner published a newer fence)
			// is refused for good: sending it again cannot help.
			if err == nil || s.closing.Load() || IsFenceError(err) {
				p.done(err)
				break
			}
			s.Retrying(err)
			p.dupExpected = true // the first attempt may have been stored
			msg := p.fut.Msg()
			for {
				time.Sleep(wait)
				wait = min(2*wait, 5*time.Second)
				fut, perr := s.js.PublishMsgAsync(msg)
				if perr == nil {
					p.fut = fut
					break
				}
				if s.closing.Load() {
					p.fut = failedFuture{msg: msg, err: perr}
					break
				}
			}
		}
	}
}

// Retrying counts an output the server did not confirm, which is about to
// be sent again, and logs it (at most five lines a minute).
func (s *Publisher) Retrying(err error) {
	s.retries.Add(1)
	if n, ok := s.limit.Allow(); ok {
		s.log.Warn().Err(err).Int("suppressed", n).Msg("output not confirmed by the server; publishing it again")
	}
}

// JetStream returns the JetStream context the publisher sends on.
func (s *Publisher) JetStream() jetstream.JetStream { return s.js }

// Publish sends an output with its de-duplication id; done runs once the
// server has stored it (or, at shutdown, when it gives up).
func (s *Publisher) Publish(subject, msgID string, data []byte, done func(error)) {
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	fut, err := s.js.PublishMsgAsync(m, jetstream.WithMsgID(msgID))
	if err != nil {
		done(err)
		return
	}
	s.pending <- pendingPub{fut: fut, done: done, dupExpected: s.expectDup != nil && s.expectDup(subject)}
}

// Latest writes the key directly on the bucket's subject, without a
// round trip per bin.
func (s *Publisher) Latest(model string, data []byte) {
	if _, err := s.js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + LatestBucket + "." + model, Data: data}); err != nil {
		s.log.Debug().Err(err).Msg("latest estimate not stored")
	}
}

// Reject publishes a rejection on <prefix>.rejected.<model>.
func (s *Publisher) Reject(model string, data []byte) {
	_ = s.nc.Publish(s.prefix+".rejected."+model, data)
}

// Close waits until every publication's callback has run (its inputs
// acknowledged), at most 10 s: an unanswered publication leaves its
// inputs for redelivery. No Publish may follow.
func (s *Publisher) Close() {
	s.closing.Store(true)
	close(s.pending)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.log.Warn().Msg("publications still unanswered at shutdown; their inputs will be redelivered")
	}
}

// IsFenceError reports a publish the server refused because its expected
// last sequence on the fence subject no longer holds: another owner has
// published a newer fence. (10071 on a single server, 10164 on a
// replicated stream.)
func IsFenceError(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == 10164
	}
	return false
}
