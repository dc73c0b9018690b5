package ratelimit

import (
	"testing"
	"time"
)

// TestLimiter: n events pass in a period, the rest are counted and the
// first event of the next period reports how many were suppressed.
func TestLimiter(t *testing.T) {
	l := New(2, time.Hour)
	for i, want := range []struct {
		ok         bool
		suppressed int
	}{{true, 0}, {true, 0}, {false, 0}, {false, 0}, {false, 0}} {
		n, ok := l.Allow()
		if ok != want.ok || n != want.suppressed {
			t.Fatalf("event %d: Allow() = %d, %v; want %d, %v", i, n, ok, want.suppressed, want.ok)
		}
	}
	l.start = l.start.Add(-time.Hour) // the period has passed
	if n, ok := l.Allow(); !ok || n != 3 {
		t.Fatalf("next period: Allow() = %d, %v; want 3 suppressed, allowed", n, ok)
	}
	if n, ok := l.Allow(); !ok || n != 0 {
		t.Fatalf("second of the period: Allow() = %d, %v; want 0, allowed", n, ok)
	}
}
