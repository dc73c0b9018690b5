//go:build faultinject

package main

import (
	"testing"
	"time"
)

// TestFaultPauseParsed: the test build reads DCGPD_FAULT_PAUSE and
// refuses what it cannot read.
func TestFaultPauseParsed(t *testing.T) {
	for _, tc := range []struct {
		env            string
		snap, resmooth time.Duration
		bad            bool
	}{
		{"snapshot=200ms,resmooth=1s", 200 * time.Millisecond, time.Second, false},
		{"resmooth=2s", 0, 2 * time.Second, false},
		{"snapshot", 0, 0, true},
		{"other=1s", 0, 0, true},
	} {
		t.Setenv("DCGPD_FAULT_PAUSE", tc.env)
		f, err := faultsFromEnv()
		if tc.bad != (err != nil) || f.SnapshotPause != tc.snap || f.ResmoothPause != tc.resmooth {
			t.Errorf("%q: %+v, %v", tc.env, f, err)
		}
	}
}
