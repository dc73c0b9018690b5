package cvi

import (
	"os"
	"testing"
)

// requireLongMode skips a long test (more than ~20 s) unless
// DCGPD_LONG=1, as CI sets it.
func requireLongMode(t *testing.T) {
	t.Helper()
	if os.Getenv("DCGPD_LONG") != "1" {
		t.Skip("long mode: DCGPD_LONG=1 runs it (CI does)")
	}
}
