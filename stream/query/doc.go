// Package query is the NATS micro service "dcgpd": dcgpd.estimate answers
// a model's newest estimate (one product or all) with its forecasts, and
// dcgpd.status its status and the daemon's build. The handlers read the
// runners' atomically swapped views, so they never wait for a bin.
package query
