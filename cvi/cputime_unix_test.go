//go:build unix

package cvi

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
