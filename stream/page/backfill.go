package page

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/natsio"
)

// backfillBatch is how many stored messages one fetch of the backfill
// asks for.
const backfillBatch = 512

// backfill reads, from the input and output streams, what model r
// received and published during the last 2 × Bins bin widths of wall
// time, so the page opened after a run (or after a takeover) shows it.
// The cost is bounded by that window's traffic (a live feed's recent
// bins; all of a replay that ran within it), and is paid once per model,
// when the page first shows it. Live messages are recorded meanwhile; a
// message seen twice is recorded once (observations and estimates of a
// bin are overwritten with the same values, smoothed revisions keep the
// highest).
func (p *pageRecorder) backfill(ctx context.Context, r *stream.Runner) error {
	js, err := jetstream.New(p.o.NC)
	if err != nil {
		return err
	}
	prefix := p.o.Prefix
	since := time.Now().Add(-2 * Bins * r.Config().Bin.Duration)
	for _, s := range []struct {
		stream, subject string
		fn              nats.MsgHandler
	}{
		{natsio.ObsStream, prefix + ".obs." + r.Name(), p.onObs},
		{natsio.LatentStream, prefix + ".latent." + r.Name(), p.onLatent},
	} {
		if err := readStored(ctx, js, s.stream, s.subject, since, s.fn); err != nil {
			return fmt.Errorf("reading %s from %s: %w", s.subject, s.stream, err)
		}
	}
	return nil
}

// readStored hands fn every message of stream on subject stored since t,
// up to the stream's last message when the read starts.
func readStored(ctx context.Context, js jetstream.JetStream, stream, subject string, t time.Time, fn nats.MsgHandler) error {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	last, err := st.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil // nothing stored on this subject
	}
	if err != nil {
		return err
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject},
		DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &t})
	if err != nil {
		return err
	}
	for {
		batch, err := cons.Fetch(backfillBatch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			if md.Sequence.Stream > last.Sequence {
				return nil // live from here: the subscription has it
			}
			fn(&nats.Msg{Subject: m.Subject(), Data: m.Data()})
			if md.Sequence.Stream == last.Sequence {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return err
		}
		if n == 0 || ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
