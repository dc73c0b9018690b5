package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream/wire"
)

// runWatch prints a daemon's estimates as they arrive, one line per
// product.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model name (default: every model)")
	url := natsURLFlag(fs)
	prefix := fs.String("prefix", "dcgp", "subject prefix (the daemon's nats.prefix)")
	kind := fs.String("kind", "all", "filtered | smoothed | all")
	history := fs.Bool("history", false, "first print the estimates already stored in JetStream, then the new ones")
	count := fs.Int("count", 0, "exit after this many messages (0: until interrupted)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	*url = natsURL(*url)
	switch *kind {
	case wire.KindFiltered, wire.KindSmoothed, "all":
	default:
		fmt.Fprintf(stderr, "dcgpd watch: --kind %q: want filtered, smoothed or all\n", *kind)
		return errUsage
	}
	token := *model
	if token == "" {
		token = "*"
	}
	subject := *prefix + ".latent." + token
	nc, err := connectClient(*url, "dcgpd watch", nats.MaxReconnects(nats.DefaultMaxReconnect))
	if err != nil {
		return err
	}
	defer nc.Close()

	msgs := make(chan []byte, 4096)
	stop, err := watchSubject(ctx, nc, subject, *history, msgs)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(stderr, "watching %s on %s\n", subject, nc.ConnectedUrlRedacted())
	n := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case data := <-msgs:
			var m wire.LatentMessage
			if err := json.Unmarshal(data, &m); err != nil {
				fmt.Fprintf(stderr, "dcgpd watch: undecodable message: %v\n", err)
				continue
			}
			if *kind != "all" && m.Kind != *kind {
				continue
			}
			if _, err := io.WriteString(stdout, formatLatent(&m)); err != nil {
				return err
			}
			n++
			if *count > 0 && n >= *count {
				return nil
			}
		}
	}
}

// watchSubject delivers the messages on subject into msgs — with history,
// first those JetStream already stores — until stop is called or ctx ends.
func watchSubject(ctx context.Context, nc *nats.Conn, subject string, history bool, msgs chan<- []byte) (stop func(), err error) {
	deliver := func(data []byte) {
		select {
		case msgs <- data:
		case <-ctx.Done():
		}
	}
	if !history {
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) { deliver(m.Data) })
		if err != nil {
			return nil, err
		}
		if err := nc.Flush(); err != nil {
			_ = sub.Unsubscribe()
			return nil, err
		}
		return func() { _ = sub.Unsubscribe() }, nil
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	name, err := js.StreamNameBySubject(ctx, subject)
	if err != nil {
		return nil, fmt.Errorf("no stream stores %s: %w", subject, err)
	}
	cons, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { deliver(m.Data()) })
	if err != nil {
		return nil, err
	}
	return cc.Stop, nil
}

// formatLatent renders a latent message as one line per product: bin
// start, model, kind and revision, product, mean, 90% band, the
// observation marks, the next bin's forecast when present, and last the
// demand turned away where the product was full.
func formatLatent(m *wire.LatentMessage) string {
	var b strings.Builder
	kind := m.Kind
	if m.Kind == wire.KindSmoothed {
		kind = fmt.Sprintf("smoothed r%d", m.Revision)
	}
	head := fmt.Sprintf("%s  %s  %-12s", m.BinStart.UTC().Format(time.RFC3339), m.Model, kind)
	if m.Missing != "" {
		fmt.Fprintf(&b, "%s  (no estimate: %s)\n", head, m.Missing)
		return b.String()
	}
	var next map[string]wire.Estimate
	for _, f := range m.Forecasts {
		if f.Horizon == 1 {
			next = make(map[string]wire.Estimate, len(f.Estimates))
			for _, e := range f.Estimates {
				next[e.Product] = e
			}
		}
	}
	width := 0
	for _, e := range m.Estimates {
		width = max(width, len(e.Product))
	}
	for _, e := range m.Estimates {
		mark := "unobserved"
		switch {
		case e.Censored:
			mark = "censored"
		case e.Observed:
			mark = "observed"
		}
		fmt.Fprintf(&b, "%s  %-*s  mean %8.3f  90%% [%8.3f, %8.3f]  %-10s", head, width, e.Product, e.Mean, e.Q05, e.Q95, mark)
		if f, ok := next[e.Product]; ok {
			fmt.Fprintf(&b, "  next %8.3f [%8.3f, %8.3f]", f.Mean, f.Q05, f.Q95)
		}
		if e.TurnedAway != nil {
			fmt.Fprintf(&b, "  turned away %.4f", *e.TurnedAway)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
