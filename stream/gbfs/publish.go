package gbfs

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publish error reasons (label values of dcgpd_gbfs_publish_errors_total).
const (
	PublishNoStream = "no_stream" // no JetStream stream stores the subject (no responders)
	PublishTimeout  = "timeout"   // no acknowledgement in time
	PublishNATS     = "nats"      // any other NATS error (connection closed, ...)
)

// Publisher stores one status message on a subject; msgID lets the
// server drop a repeat.
type Publisher interface {
	Publish(ctx context.Context, subject, msgID string, data []byte) error
}

// JetStreamPublisher publishes to a JetStream stream and waits for the
// server's acknowledgement.
type JetStreamPublisher struct {
	JS jetstream.JetStream
}

// Publish implements Publisher.
func (p JetStreamPublisher) Publish(ctx context.Context, subject, msgID string, data []byte) error {
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	if _, err := p.JS.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publishing %s on %s: %w", msgID, subject, err)
	}
	return nil
}

// PublishError is a status message the daemon's JetStream did not store:
// the feed was fine.
type PublishError struct {
	Subject, Reason string
	Err             error
}

func (e *PublishError) Error() string {
	switch e.Reason {
	case PublishNoStream:
		return fmt.Sprintf("no JetStream stream stores subject %s: is dcgpd serve running? (%v)", e.Subject, e.Err)
	case PublishTimeout:
		return fmt.Sprintf("no acknowledgement from JetStream for subject %s in time: %v", e.Subject, e.Err)
	}
	return fmt.Sprintf("status not stored on %s: %v", e.Subject, e.Err)
}

func (e *PublishError) Unwrap() error { return e.Err }

// publishError names why a message on subject was not stored.
func publishError(subject string, err error) *PublishError {
	reason := PublishNATS
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		reason = PublishNoStream
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		reason = PublishTimeout
	}
	return &PublishError{Subject: subject, Reason: reason, Err: err}
}
