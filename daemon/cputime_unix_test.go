//go:build unix

package daemon

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the process has used so
// far: on a shared machine it measures a benchmark's work where the wall
// clock also counts the other jobs' turns.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS returns the process's maximum resident set size in bytes so far
// (0 when unknown).
func peakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Maxrss) << 10 // kilobytes on Linux
}
