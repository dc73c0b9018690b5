package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/snapshot"
)

// runSnapshot is `dcgpd snapshot inspect FILE`: verify a snapshot and
// print what it holds.
func runSnapshot(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 2 || args[0] != "inspect" {
		fmt.Fprintln(stderr, "usage: dcgpd snapshot inspect FILE")
		return errUsage
	}
	b, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	m, err := snapshot.Unmarshal(b)
	if err != nil {
		return fmt.Errorf("%s: %w", args[1], err)
	}
	snapshot.Describe(stdout, m, len(b))
	return nil
}

// faultsFromEnv reads DCGPD_FAULT_PAUSE ("snapshot=200ms,resmooth=1s"),
// the delays a crash test injects so a kill lands inside a snapshot
// write or a re-smooth.
func faultsFromEnv() (config.Faults, error) {
	var f config.Faults
	v := os.Getenv("DCGPD_FAULT_PAUSE")
	if v == "" {
		return f, nil
	}
	for _, part := range strings.Split(v, ",") {
		key, val, ok := strings.Cut(part, "=")
		d, err := time.ParseDuration(val)
		if !ok || err != nil {
			return f, fmt.Errorf("DCGPD_FAULT_PAUSE: %q is not name=duration", part)
		}
		switch key {
		case "snapshot":
			f.SnapshotPause = d
		case "resmooth":
			f.ResmoothPause = d
		default:
			return f, fmt.Errorf("DCGPD_FAULT_PAUSE: unknown pause %q (snapshot, resmooth)", key)
		}
	}
	return f, nil
}
