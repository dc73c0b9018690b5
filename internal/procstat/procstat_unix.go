//go:build unix

package procstat

import (
	"syscall"
	"time"
)

// Process returns the CPU time (user + system) the process has used so
// far, or 0 where it cannot be read.
func CPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSS returns the process's maximum resident set size in bytes so far
// (0 when unknown; Linux reports kilobytes).
func PeakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Maxrss) << 10
}
