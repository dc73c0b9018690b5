// Package procstat reads what the process has used so far, for
// benchmarks on shared machines: its CPU time (where the wall clock also
// counts other jobs' turns, the process's own CPU time measures its work)
// and its peak resident memory.
package procstat
