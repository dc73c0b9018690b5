//go:build !faultinject

package main

import (
	"testing"

	"github.com/dcgpd/dcgpd/config"
)

// TestReleaseIgnoresFaultPause: the release binary (built without
// -tags faultinject) injects no pause, whatever DCGPD_FAULT_PAUSE says.
func TestReleaseIgnoresFaultPause(t *testing.T) {
	t.Setenv("DCGPD_FAULT_PAUSE", "snapshot=200ms,resmooth=1s")
	f, err := faultsFromEnv()
	if err != nil || f != (config.Faults{}) {
		t.Fatalf("faultsFromEnv() = %+v, %v; want no pause", f, err)
	}
}
