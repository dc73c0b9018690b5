// Package test holds dcgpd's end-to-end and paper-reproduction tests and
// the fit benchmarks. Tests that need the real data in ../shared skip,
// saying so, when it is absent (a fresh clone has no ../shared).
package test
