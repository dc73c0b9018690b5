package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// runOCPI polls an OCPI 2.2.1 locations endpoint and publishes the EVSE
// statuses as they change.
func runOCPI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd ocpi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := ocpi.DefaultConfig()
	fs.StringVar(&cfg.URL, "url", "", "the OCPI 2.2.1 locations endpoint (required)")
	model := fs.String("model", "", "model name: publishes to <prefix>.evse.<model> (required)")
	tokenFile := fs.String("token-file", "", "file holding the OCPI credentials token (default $OCPI_TOKEN; empty: no Authorization header)")
	url := natsURLFlag(fs)
	prefix := fs.String("prefix", "dcgp", "subject prefix (the daemon's nats.prefix)")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "time between polls")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "per page request")
	fs.IntVar(&cfg.Limit, "limit", cfg.Limit, "page size asked for (0: the server's)")
	fs.DurationVar(&cfg.MaxAge, "max-age", cfg.MaxAge, "refuse a response whose timestamp is older (0: no check)")
	fs.IntVar(&cfg.MaxPages, "max-pages", cfg.MaxPages, "most pages in one poll")
	fs.DurationVar(&cfg.Refresh, "refresh", cfg.Refresh, "publish an unchanged status again after this long (shorter than the daemon's [[charging]] retention; 0: never)")
	served := addServedFlags(fs)
	metrics := fs.String("metrics", "", "serve Prometheus /metrics on this address (empty: off)")
	level := fs.String("log-level", "info", "debug | info | warn | error")
	format := fs.String("log-format", "auto", "json | console | auto")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	*url = natsURL(*url)
	if cfg.URL == "" || *model == "" {
		fmt.Fprintln(stderr, "dcgpd ocpi: --url and --model are required")
		fs.Usage()
		return errUsage
	}
	cfg.Token = os.Getenv("OCPI_TOKEN")
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("reading the OCPI token: %w", err)
		}
		cfg.Token = strings.TrimSpace(string(b))
	}
	if err := served.apply(&cfg); err != nil {
		fmt.Fprintf(stderr, "dcgpd %v\n", err)
		return errUsage
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "dcgpd %v\n", err)
		return errUsage
	}
	log, err := newLogger(stderr, config.LogConfig{Level: *level, Format: *format})
	if err != nil {
		return err
	}
	nc, err := connectClient(*url, "dcgpd ocpi")
	if err != nil {
		return err
	}
	defer nc.Close()
	reg := prometheus.NewRegistry()
	defer serveMetrics(*metrics, reg, log)()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	pub := ocpi.NewNATSPublisher(nc, *prefix, *model)
	pub.JS = js // every status waits for the stream's acknowledgement
	out, err := served.wrap(pub, js, *model, *prefix, cfg.Interval, log)
	if err != nil {
		return err
	}
	p, err := ocpi.NewPoller(cfg, out, log, ocpi.NewMetrics(reg))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "polling %s, publishing to %s on %s\n", cfg.URL, pub.Subject, nc.ConnectedUrlRedacted())
	if err := p.Run(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil // stopped by a signal
}
