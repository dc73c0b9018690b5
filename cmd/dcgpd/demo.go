package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/internal/app/demo"
)

// runDemo parses the demo's flags and runs internal/app/demo: the daemon on a
// simulated bike-share cluster, scored against its true demand and
// plotted.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opt demo.Options
	fs.StringVar(&opt.Out, "out", ".", "directory for the plot (dcgpd-demo.svg)")
	fs.Uint64Var(&opt.Seed, "seed", 1, "seed of the simulated cluster")
	fs.IntVar(&opt.Hubs, "hubs", 5, "number of hubs")
	fs.IntVar(&opt.Days, "days", 14, "days of hourly data")
	fs.Float64Var(&opt.Speed, "speed", 0, "bins replayed per second within each day (0: as fast as the daemon takes them)")
	fs.BoolVar(&opt.Relearn, "relearn", false, "re-learn the hyperparameters by ELBO at every re-smooth (slower)")
	level := fs.String("log-level", "error", "daemon log level: debug | info | warn | error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if opt.Hubs < 2 || opt.Days < 2 {
		fmt.Fprintln(stderr, "dcgpd demo: need at least 2 hubs and 2 days")
		return errUsage
	}
	log, err := newLogger(stderr, config.LogConfig{Level: *level, Format: "auto"})
	if err != nil {
		return err
	}
	return demo.Run(ctx, opt, stdout, log)
}
