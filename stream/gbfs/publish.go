package gbfs

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
