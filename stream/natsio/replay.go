package natsio

import (
	"context"
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

// Replay publishes bins as input messages for model to JetStream and
// waits until the server has stored all of them. Each message carries a
// Nats-Msg-Id (model/bin[/product]) so a repeated replay is de-duplicated.
func Replay(ctx context.Context, js jetstream.JetStream, model string, bins []ReplayBin, o ReplayOptions) (int, error) {
	if o.Prefix == "" {
		o.Prefix = "dcgp"
	}
	subject := o.Prefix + ".obs." + model
	began := time.Now()
	sent := 0
	publish := func(id string, m *wire.ObsMessage) error {
		data, err := wire.EncodeObs(m)
		if err != nil {
			return err
		}
		for {
			_, err = js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: data}, jetstream.WithMsgID(id))
			if err == nil {
				sent++
				return nil
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
	for i, b := range bins {
		if o.Speed > 0 && o.Width > 0 {
			due := began.Add(time.Duration(float64(i) / o.Speed * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return sent, ctx.Err()
				}
			}
		}
		start := b.Start.UTC()
		if o.Single {
			for _, ob := range b.Observations {
				m := wire.ObsMessage{Schema: wire.SchemaVersion, Model: model, BinStart: &start, Product: ob.Product, Demand: ob.Demand, Supply: ob.Supply, Censored: ob.Censored}
				if err := publish(model+"/"+strconv.FormatInt(start.Unix(), 10)+"/"+ob.Product, &m); err != nil {
					return sent, err
				}
			}
			continue
		}
		m := wire.ObsMessage{Schema: wire.SchemaVersion, Model: model, BinStart: &start, Observations: b.Observations}
		if err := publish(model+"/"+strconv.FormatInt(start.Unix(), 10), &m); err != nil {
			return sent, err
		}
	}
	if o.Watermark && len(bins) > 0 {
		wm := bins[len(bins)-1].Start.Add(o.Width).UTC()
		m := wire.ObsMessage{Schema: wire.SchemaVersion, Model: model, Watermark: &wm}
		if err := publish(model+"/watermark/"+strconv.FormatInt(wm.Unix(), 10), &m); err != nil {
			return sent, err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return sent, ctx.Err()
	}
	return sent, nil
}
