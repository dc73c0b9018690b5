package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream/csvio"
	"github.com/dcgpd/dcgpd/stream/evseflow"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/ocpi"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// servedPublisher publishes each poll's statuses through inner, then
// derives the sessions started per site and bin from them
// (stream/evseflow) and publishes the bins the polls have closed as the
// model's observations, each followed by a watermark at its end: the
// served counts of an operator with charger status but no session feed.
// A site-bin the polls did not observe is left out (the model sees no
// observation); a count that may be short (evseflow's CensoredBelow) is
// published as it is and logged. Bins whose publication failed are kept
// and offered again after the next poll.
type servedPublisher struct {
	inner   ocpi.Publisher
	deriver *evseflow.Deriver
	js      jetstream.JetStream
	model   string
	prefix  string
	width   time.Duration
	log     zerolog.Logger
	pending []evseflow.Bin
}

// newServedPublisher reads the model's sites from productsPath (the
// model's products CSV: the OCPI location ids).
func newServedPublisher(inner ocpi.Publisher, js jetstream.JetStream, productsPath, model, prefix string, cfg evseflow.Config, log zerolog.Logger) (*servedPublisher, error) {
	f, err := os.Open(productsPath)
	if err != nil {
		return nil, fmt.Errorf("--products: %w", err)
	}
	defer f.Close()
	prods, err := csvio.ReadProducts(f, productsPath)
	if err != nil {
		return nil, err
	}
	d, err := evseflow.New(cfg, prods.Names)
	if err != nil {
		return nil, err
	}
	return &servedPublisher{inner: inner, deriver: d, js: js, model: model, prefix: prefix, width: cfg.Bin, log: log}, nil
}

func (s *servedPublisher) Publish(ctx context.Context, b ocpi.Batch) error {
	if err := s.inner.Publish(ctx, b); err != nil {
		return err
	}
	statuses := append(append([]ocpi.StatusEvent(nil), b.Changed...), b.Refreshed...)
	if err := s.deriver.Poll(b.Polled, statuses); err != nil {
		s.log.Warn().Err(err).Msg("served counts: statuses refused")
	}
	s.pending = append(s.pending, s.deriver.Advance(b.Polled)...)
	if len(s.pending) == 0 {
		return nil
	}
	if err := s.publishBins(ctx, s.pending); err != nil {
		// The statuses are published; the bins wait for the next poll.
		s.log.Error().Err(err).Int("site_bins", len(s.pending)).Msg("served counts not published; offered again after the next poll")
		return nil
	}
	s.pending = s.pending[:0]
	return nil
}

// publishBins sends the observed site-bins grouped by bin, then a
// watermark at the last bin's end.
func (s *servedPublisher) publishBins(ctx context.Context, bins []evseflow.Bin) error {
	var out []natsio.ReplayBin
	for _, x := range bins {
		if n := len(out); n == 0 || !out[n-1].Start.Equal(x.Start) {
			out = append(out, natsio.ReplayBin{Start: x.Start})
		}
		if !x.Observed {
			continue
		}
		if x.CensoredBelow {
			s.log.Debug().Str("site", x.Site).Time("bin", x.Start).Int("started", x.Started).Int("possible", x.Possible).
				Float64("coverage", x.Coverage).Msg("served count may be short")
		}
		v := float64(x.Started)
		cur := &out[len(out)-1]
		cur.Observations = append(cur.Observations, wire.Observation{Product: x.Site, Demand: &v})
	}
	last := out[len(out)-1].Start.Add(s.width)
	keep := out[:0]
	for _, b := range out {
		if len(b.Observations) > 0 {
			keep = append(keep, b)
		}
	}
	if _, err := natsio.Replay(ctx, s.js, s.model, keep, natsio.ReplayOptions{Prefix: s.prefix, Width: s.width}); err != nil {
		return err
	}
	wm := last.UTC()
	data, err := wire.EncodeObs(&wire.ObsMessage{Schema: wire.SchemaVersion, Model: s.model, Watermark: &wm})
	if err != nil {
		return err
	}
	subject := s.prefix + ".obs." + s.model
	if _, err := s.js.Publish(ctx, subject, data, jetstream.WithMsgID(s.model+"/watermark/"+strconv.FormatInt(wm.Unix(), 10))); err != nil {
		return fmt.Errorf("publishing the watermark %s to %s: %w", wm.Format(time.RFC3339), subject, err)
	}
	return nil
}

// servedOptions are `dcgpd ocpi`'s flags for the served counts and the
// poll clock.
type servedOptions struct {
	clock, products, origin string
	bin, maxGap             time.Duration
}

func addServedFlags(fs interface {
	StringVar(*string, string, string, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}) *servedOptions {
	o := &servedOptions{}
	fs.StringVar(&o.clock, "clock", "wall", "each poll's time: wall (this machine's clock) | response (the response's timestamp, for a simulated or recorded feed such as examples/ev-5min's server; --max-age is then not checked)")
	fs.StringVar(&o.products, "served-products", "", "also publish each site's sessions started per bin, derived from the EVSE status, as the model's observations (an operator without a session feed): the model's products CSV, whose ids are the OCPI location ids")
	fs.DurationVar(&o.bin, "bin", 5*time.Minute, "with --served-products: the model's bin")
	fs.StringVar(&o.origin, "origin", "1970-01-01T00:00:00Z", "with --served-products: the model's origin, RFC 3339")
	fs.DurationVar(&o.maxGap, "max-gap", 0, "with --served-products: the longest interval between polls whose changes are counted (0: twice --interval, at least 10m)")
	return o
}

// apply sets the poller's clock from --clock.
func (o *servedOptions) apply(cfg *ocpi.Config) error {
	switch o.clock {
	case "wall":
	case "response":
		cfg.ResponseClock = true
	default:
		return fmt.Errorf("ocpi: --clock %q: want wall or response", o.clock)
	}
	return nil
}

// wrap returns pub, or with --served-products a servedPublisher around it.
func (o *servedOptions) wrap(pub ocpi.Publisher, js jetstream.JetStream, model, prefix string, interval time.Duration, log zerolog.Logger) (ocpi.Publisher, error) {
	if o.products == "" {
		return pub, nil
	}
	origin, err := time.Parse(time.RFC3339, o.origin)
	if err != nil {
		return nil, fmt.Errorf("--origin: %w", err)
	}
	cfg := evseflow.Config{Origin: origin, Bin: o.bin, MaxGap: o.maxGap}
	if cfg.MaxGap == 0 {
		cfg.MaxGap = max(2*interval, evseflow.DefaultConfig().MaxGap)
	}
	return newServedPublisher(pub, js, o.products, model, prefix, cfg, log)
}
