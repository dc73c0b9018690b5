package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/daemon"
)

// runServe runs the daemon of a configuration file until SIGINT or
// SIGTERM (the signal context main gives).
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "daemon configuration TOML (see dcgpd.toml) (required)")
	level := fs.String("log-level", "", "debug | info | warn | error (overrides log.level)")
	format := fs.String("log-format", "", "json | console | auto (overrides log.format; auto: console on a terminal)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cfgPath == "" {
		fmt.Fprintln(stderr, "dcgpd serve: --config is required")
		fs.Usage()
		return errUsage
	}
	cfg, err := config.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *level != "" {
		cfg.Log.Level = *level
	}
	if *format != "" {
		cfg.Log.Format = *format
	}
	log, err := newLogger(stderr, cfg.Log)
	if err != nil {
		return err
	}
	if cfg.Faults, err = faultsFromEnv(); err != nil {
		return err
	}
	d, err := daemon.New(cfg, log)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

// newLogger builds the zerolog logger a LogConfig asks for: JSON, or
// human-readable console lines (auto: console when w is a terminal).
func newLogger(w io.Writer, c config.LogConfig) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(c.Level)
	if err != nil || c.Level == "" || lvl < zerolog.DebugLevel || lvl > zerolog.ErrorLevel {
		return zerolog.Nop(), fmt.Errorf("log level %q: want debug, info, warn or error", c.Level)
	}
	console := false
	switch c.Format {
	case "json":
	case "console":
		console = true
	case "auto", "":
		console = isTerminal(w)
	default:
		return zerolog.Nop(), fmt.Errorf("log format %q: want json, console or auto", c.Format)
	}
	if console {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
