//go:build faultinject

package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dcgpd/dcgpd/config"
)

// faultsFromEnv reads DCGPD_FAULT_PAUSE ("snapshot=200ms,resmooth=1s"),
// the delays a crash test injects so a kill lands inside a snapshot
// write or a re-smooth. Only a binary built with -tags faultinject (the
// end-to-end tests build it so) reads it; a release binary has no such
// hook (faults_off.go).
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
