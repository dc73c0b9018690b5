//go:build !unix

package procstat

import "time"

// Process returns 0: the process's CPU time is not measured on this
// platform.
func CPU() time.Duration { return 0 }

// PeakRSS returns 0: the peak resident memory is not measured on this
// platform.
func PeakRSS() int64 { return 0 }
