package procstat

import (
	"runtime"
	"testing"
)

// TestCPUGrows: spinning for a while adds CPU time on platforms that
// measure it, and the reading never goes back.
func TestCPUGrows(t *testing.T) {
	before := CPU()
	x := 0.0
	for i := 0; i < 50_000_000; i++ {
		x += float64(i) * 1e-9
	}
	after := CPU()
	if after < before {
		t.Fatalf("CPU time went back: %v then %v", before, after)
	}
	if runtime.GOOS == "linux" && after == before {
		t.Fatalf("no CPU time counted for a busy loop (%v)", x)
	}
}
