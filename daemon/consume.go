package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// consumer is one model's durable pull consumer.
type consumer struct {
	r    *stream.Runner
	cons jetstream.Consumer
	ctx  jetstream.ConsumeContext
}

// consume binds each model's durable pull consumer where the model's
// state ends and feeds its messages to the model's runner.
func (d *Daemon) consume(ctx context.Context, js jetstream.JetStream) ([]*consumer, error) {
	var out []*consumer
	for _, r := range d.order {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cons, err := d.bindConsumer(cctx, js, r)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("consumer for model %s: %w", r.Name(), err)
		}
		cc, err := cons.Consume(func(msg jetstream.Msg) { d.Deliver(ctx, r, msg, msg) }, natsio.PullBuffer())
		if err != nil {
			return nil, fmt.Errorf("consuming for model %s: %w", r.Name(), err)
		}
		out = append(out, &consumer{r: r, cons: cons, ctx: cc})
	}
	return out, nil
}

// Deliver decodes one input message and submits it to the model's
// runner, acknowledged later through ack.
func (d *Daemon) Deliver(ctx context.Context, r *stream.Runner, msg jetstream.Msg, ack stream.Acker) {
	var seq uint64
	if md, err := msg.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	m, err := wire.DecodeObs(msg.Data())
	if err == nil && m.Model != r.Name() {
		err = wire.Reject(wire.ReasonModel, "message for model %q on %s", m.Model, msg.Subject())
	}
	if err != nil {
		var rej *wire.Rejection
		if !errors.As(err, &rej) {
			rej = wire.Reject(wire.ReasonMalformed, "%v", err)
		}
		m = wire.Refused(rej)
	}
	_ = r.Submit(ctx, m, seq, ack) // an error: shutting down, the message is redelivered later
}

// bindConsumer creates the model's durable consumer so that its first
// message is the first one the model's state does not hold: right after
// the snapshot's sequence (or, with snapshots off, after the consumer's
// acknowledged floor). An existing consumer is replaced rather than
// resumed: messages it delivered to a killed process would otherwise wait
// out the whole ack_wait before redelivery, and its acknowledgements may
// be ahead of a snapshot that was refused. The stream keeps acknowledged
// messages, so nothing after the state is skipped.
func (d *Daemon) bindConsumer(ctx context.Context, js jetstream.JetStream, r *stream.Runner) (jetstream.Consumer, error) {
	c := &d.cfg.NATS
	name := "dcgpd_" + r.Name()
	cfg := jetstream.ConsumerConfig{Durable: name, FilterSubject: c.Prefix + ".obs." + r.Name(),
		AckPolicy: jetstream.AckAllPolicy, AckWait: c.AckWait.Duration, MaxAckPending: c.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy, MaxDeliver: -1, Metadata: holderMetadata()}
	st, err := js.Stream(ctx, natsio.ObsStream)
	if err != nil {
		return nil, err
	}
	d.replayEnd.Store(r.Name(), st.CachedInfo().State.LastSeq)
	after := r.Applied()
	if err := r.BindInputStream(natsio.ObsStream, st.CachedInfo().Created); err != nil {
		return nil, err
	}
	if old, err := st.Consumer(ctx, name); err == nil {
		info, err := old.Info(ctx)
		if err != nil {
			return nil, err
		}
		if err := consumedElsewhere(r.Name(), info); err != nil {
			return nil, err
		}
		if r.Store() == nil {
			after = info.AckFloor.Stream
		}
		if err := st.DeleteConsumer(ctx, name); err != nil {
			return nil, err
		}
		d.log.Info().Str("model", r.Name()).Uint64("ack_floor", info.AckFloor.Stream).Uint64("resume_after", after).Msg("input consumer re-created at the model's state")
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, err
	}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
		if si, err := st.Info(ctx); err == nil && si.State.FirstSeq > after+1 {
			d.log.Error().Str("model", r.Name()).Uint64("state", after).Uint64("first", si.State.FirstSeq).
				Msg("input after the model's state has left the stream (its limits removed it): the model continues with a gap")
		}
	}
	return st.CreateOrUpdateConsumer(ctx, cfg)
}

// watchPending samples each consumer's backlog for the metrics.
func (d *Daemon) watchPending(ctx context.Context, cs []*consumer) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, c := range cs {
				ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
				info, err := c.cons.Info(ictx)
				cancel()
				if err == nil {
					d.met.SetPending(c.r.Name(), info.NumPending+uint64(info.NumAckPending))
				}
			}
		}
	}
}
