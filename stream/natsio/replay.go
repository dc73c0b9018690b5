package natsio

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream/wire"
)

// ReplayBin is one bin of a data set to publish.
type ReplayBin struct {
	Start        time.Time
	Observations []wire.Observation
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Prefix of the subjects (default "dcgp").
	Prefix string
	// Speed is how many bins are sent per second of wall time; 0 sends as
	// fast as the server acknowledges.
	Speed float64
	// Width is the bin width (the watermark is the last bin's end).
	Width time.Duration
	// Single sends one message per observation instead of one per bin.
	Single bool
	// Watermark sends a final watermark at the last bin's end (Width
	// after its start) so that it closes even if products are missing
	// from it (with the model's lateness 0).
	Watermark bool
}

// ReplayResult counts what a replay's publications became, from the
// server's acknowledgements.
type ReplayResult struct {
	// Sent is how many messages were published.
	Sent int
	// Stored is how many the stream stored; Duplicates how many it
	// dropped as a repeat of a Nats-Msg-Id inside its duplicate window.
	Stored, Duplicates int
}

// Replay publishes bins as input messages for model to JetStream and
// waits for the server's acknowledgement of each. Each message carries a
// Nats-Msg-Id (model/bin[/product]) so a repeated replay is
// de-duplicated; the result says how many were stored and how many were
// duplicates. A publication the server refused or did not acknowledge
// is an error naming the subject, after the rest were sent.
func Replay(ctx context.Context, js jetstream.JetStream, model string, bins []ReplayBin, o ReplayOptions) (ReplayResult, error) {
	if o.Prefix == "" {
		o.Prefix = "dcgp"
	}
	subject := o.Prefix + ".obs." + model
	began := time.Now()
	var res ReplayResult
	var acks ackTally
	publish := func(id string, m *wire.ObsMessage) error {
		data, err := wire.EncodeObs(m)
		if err != nil {
			return err
		}
		for {
			f, err := js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: data}, jetstream.WithMsgID(id))
			if err == nil {
				res.Sent++
				acks.add(f)
				return nil
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				return fmt.Errorf("publishing to %s: %w", subject, err)
			}
			// Too many unacknowledged publications: wait for some.
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	send := func() error {
		for i, b := range bins {
			acks.collect(&res, false)
			if o.Speed > 0 && o.Width > 0 {
				due := began.Add(time.Duration(float64(i) / o.Speed * float64(time.Second)))
				if d := time.Until(due); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
			start := b.Start.UTC()
			if o.Single {
				for _, ob := range b.Observations {
					m := wire.ObsMessage{Schema: wire.SchemaVersion, Model: model, BinStart: &start, Product: ob.Product, Demand: ob.Demand, Supply: ob.Supply, Censored: ob.Censored}
					if err := publish(model+"/"+strconv.FormatInt(start.Unix(), 10)+"/"+ob.Product, &m); err != nil {
						return err
					}
				}
				continue
			}
			m := wire.ObsMessage{Schema: wire.SchemaVersion, Model: model, BinStart: &start, Observations: b.Observations}
			if err := publish(model+"/"+strconv.FormatInt(start.Unix(), 10), &m); err != nil {
				return err
			}
		}
		if o.Watermark && len(bins) > 0 {
			wm := bins[len(bins)-1].Start.Add(o.Width).UTC()
			m := wire.ObsMessage{Schema: wire.SchemaVersion, Model: model, Watermark: &wm}
			if err := publish(model+"/watermark/"+strconv.FormatInt(wm.Unix(), 10), &m); err != nil {
				return err
			}
		}
		return nil
	}
	err := send()
	// Every publication sent is accounted for, also after an error; one
	// still unacknowledged when ctx ends counts as not stored.
	select {
	case <-js.PublishAsyncComplete():
		acks.collect(&res, true)
	case <-ctx.Done():
		acks.collect(&res, false)
		if n := len(acks.pending); n > 0 {
			acks.failed += n
			if acks.first == nil {
				acks.first = fmt.Errorf("%d not acknowledged: %w", n, ctx.Err())
			}
		}
		if err == nil {
			err = ctx.Err()
		}
	}
	if err == nil && acks.failed > 0 {
		err = fmt.Errorf("publishing to %s: %d of %d messages not stored: %w", subject, acks.failed, res.Sent, acks.first)
	}
	return res, err
}

// ackTally follows a replay's publications in flight.
type ackTally struct {
	pending []jetstream.PubAckFuture
	failed  int
	first   error
}

func (a *ackTally) add(f jetstream.PubAckFuture) { a.pending = append(a.pending, f) }

// collect counts the acknowledged publications, in order, stopping at the
// first still in flight unless all is set (then it waits for each).
func (a *ackTally) collect(res *ReplayResult, all bool) {
	n := 0
	for _, f := range a.pending {
		var ack *jetstream.PubAck
		var err error
		if all {
			select {
			case ack = <-f.Ok():
			case err = <-f.Err():
			}
		} else {
			select {
			case ack = <-f.Ok():
			case err = <-f.Err():
			default:
				a.pending = a.pending[n:]
				return
			}
		}
		n++
		switch {
		case err != nil:
			a.failed++
			if a.first == nil {
				a.first = err
			}
		case ack.Duplicate:
			res.Duplicates++
		default:
			res.Stored++
		}
	}
	a.pending = a.pending[:0]
}
