package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/gbfs"
)

// runGBFS polls a GBFS system and publishes its station status to a
// daemon.
func runGBFS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd gbfs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := gbfs.DefaultConfig()
	fs.StringVar(&cfg.URL, "url", "", "the system's auto-discovery file, gbfs.json (GBFS 2.3 or 3.0) (required)")
	fs.StringVar(&cfg.Feed, "feed", "", "feed name: publishes to <prefix>.status.<feed> (required)")
	url := natsURLFlag(fs)
	fs.StringVar(&cfg.Prefix, "prefix", cfg.Prefix, "subject prefix (the daemon's nats.prefix)")
	fs.StringVar(&cfg.Language, "language", cfg.Language, "language of the 2.3 feed list and of 3.0 station names")
	fs.DurationVar(&cfg.MinInterval, "min-interval", cfg.MinInterval, "shortest wait between polls (station_status's ttl is used, bounded by these)")
	fs.DurationVar(&cfg.MaxInterval, "max-interval", cfg.MaxInterval, "longest wait between polls")
	fs.DurationVar(&cfg.RefreshInterval, "refresh", cfg.RefreshInterval, "re-read gbfs.json and station_information at least this often")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "per HTTP request")
	fs.DurationVar(&cfg.MaxFeedAge, "max-feed-age", cfg.MaxFeedAge, "refuse a station_status whose last_updated is older")
	fs.DurationVar(&cfg.MaxReportAge, "max-report-age", cfg.MaxReportAge, "skip a station whose last_reported is this much older than last_updated")
	fs.DurationVar(&cfg.MaxClockSkew, "max-clock-skew", cfg.MaxClockSkew, "a last_updated further ahead of this clock is published stamped at this clock")
	fs.DurationVar(&cfg.MaxBackoff, "max-backoff", cfg.MaxBackoff, "longest wait after failed polls (doubling from --min-interval) or for a Retry-After")
	fs.DurationVar(&cfg.WarnInterval, "warn-interval", cfg.WarnInterval, "repeat the warning of a lasting failure at most this often")
	fs.BoolVar(&cfg.PublishUninformed, "publish-uninformed", false, "publish, without capacity, stations absent from station_information (default: skip them)")
	metrics := fs.String("metrics", "", "serve Prometheus /metrics on this address (empty: off)")
	level := fs.String("log-level", "info", "debug | info | warn | error")
	format := fs.String("log-format", "auto", "json | console | auto")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	*url = natsURL(*url)
	if cfg.URL == "" || cfg.Feed == "" {
		fmt.Fprintln(stderr, "dcgpd gbfs: --url and --feed are required")
		fs.Usage()
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
	reg := prometheus.NewRegistry()
	stopMetrics, err := listenMetrics(*metrics, reg, log) // a busy address fails here, before any poll
	if err != nil {
		return err
	}
	defer stopMetrics()
	nc, err := connectClient(*url, "dcgpd gbfs")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	p, err := gbfs.NewPoller(cfg, gbfs.JetStreamPublisher{JS: js}, gbfs.NewMetrics(reg), log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "polling %s, publishing to %s on %s\n", cfg.URL, cfg.Subject(), nc.ConnectedUrlRedacted())
	return p.Run(ctx)
}
