package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// catchUpWait bounds how long consumePast waits to read a stream's past.
const catchUpWait = 30 * time.Second

// consumePast reads subject from streamName, from since ago on, handing
// each message to handle, and keeps reading; it returns once handle has
// seen what the stream held at the start (at most catchUpWait), so that
// bins replayed after a restart see the status they saw before. what
// names the reader in errors and the log.
func (d *Daemon) consumePast(ctx context.Context, js jetstream.JetStream, streamName, subject string, since time.Duration, what string, handle func(jetstream.Msg)) (jetstream.ConsumeContext, error) {
	start := time.Now().Add(-since)
	cons, err := js.OrderedConsumer(ctx, streamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject},
		DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start})
	if err != nil {
		return nil, fmt.Errorf("status consumer for %s: %w", what, err)
	}
	var last uint64
	if st, err := js.Stream(ctx, streamName); err == nil {
		if info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject)); err == nil {
			last = info.State.LastSeq
		}
	}
	caught := make(chan struct{})
	closed := false // touched only by the consumer's callback goroutine
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		handle(msg)
		if md, err := msg.Metadata(); err == nil && !closed && md.Sequence.Stream >= last {
			closed = true
			close(caught)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("status consumer for %s: %w", what, err)
	}
	if last == 0 {
		return cc, nil
	}
	select {
	case <-caught:
	case <-time.After(catchUpWait):
		d.log.Warn().Str("status", what).Msg("status stream not read up to its end in 30 s; bins may close with less status than before a restart")
	case <-ctx.Done():
		return cc, ctx.Err()
	}
	return cc, nil
}
