package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/dcgpd/dcgpd/internal/app/feedsim"
)

// runFeedSim serves a simulated, changing GBFS feed until SIGINT or
// SIGTERM: the rebalancing quick start's system (examples/gbfs).
func runFeedSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd feedsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := feedsim.DefaultConfig()
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve the feed on")
	fs.IntVar(&cfg.Stations, "stations", cfg.Stations, fmt.Sprintf("stations, 1 to %d", len(feedsim.Names)))
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the capacities, stock, rates and trips")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "a station's pickups plus returns per second (mean)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sim, err := feedsim.New(cfg, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "dcgpd %v\n", err)
		return errUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("feedsim: %w", err)
	}
	srv := &http.Server{Handler: sim.Handler(time.Now), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "serving a simulated GBFS feed of %d stations at http://%s/gbfs.json (Ctrl-C stops)\n", cfg.Stations, ln.Addr())
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-errc
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("feedsim: %w", err)
	}
}
