// Command dcgpd infers true demand from censored sales with
// diffusion-aware censored Gaussian processes.
//
//	dcgpd fit        batch CSV in, posterior CSV out
//	dcgpd experiment reproduce the paper's synthetic experiments
//	dcgpd simulate   write a seeded bike-share cluster as CSV
//	dcgpd serve      run the daemon: NATS in, estimates out
//	dcgpd replay     publish an observations CSV to a daemon
//	dcgpd watch      print a daemon's estimates as they arrive
//	dcgpd gbfs       poll a GBFS feed and publish station status to a daemon
//	dcgpd ocpi       poll an OCPI locations endpoint and publish EVSE status changes
//	dcgpd demo       the daemon on a simulated cluster: summary and plot
//	dcgpd snapshot   inspect a daemon snapshot file
//	dcgpd version    print the build's module version and revision
//
// Run "dcgpd <command> -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"fit", "fit a model to a batch CSV and write the posterior", runFit},
	{"experiment", "reproduce the paper's synthetic experiments", runExperiment},
	{"simulate", "write a seeded simulated bike-share cluster as CSV", runSimulate},
	{"serve", "run the daemon: NATS in, online and smoothed estimates out", runServe},
	{"replay", "publish an observations CSV as bin messages to a daemon", runReplay},
	{"backtest", "score the daemon's forecasts by rolling origin against the baselines", runBacktest},
	{"watch", "print a daemon's estimates as they arrive", runWatch},
	{"gbfs", "poll a GBFS feed and publish its station status to a daemon", runGBFS},
	{"feedsim", "serve a simulated, changing GBFS feed (the rebalancing quick start)", runFeedSim},
	{"ocpi", "poll an OCPI locations endpoint and publish EVSE status changes", runOCPI},
	{"demo", "run the daemon on a simulated bike-share cluster, report and plot", runDemo},
	{"snapshot", "inspect a daemon snapshot file: dcgpd snapshot inspect FILE", runSnapshot},
	{"version", "print the module version and VCS revision of this build", runVersion},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			}
			fmt.Fprintf(stderr, "dcgpd %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "dcgpd: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// errUsage reports bad flags (already printed by the flag package).
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dcgpd <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
}

// parseFlags parses args, mapping flag errors to errUsage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	return nil
}
