package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// listenMetrics binds addr and serves reg's metrics on /metrics there
// (nothing when addr is empty) for an input adapter; an address that
// cannot be bound is an error at once, naming it. The returned function
// stops the listener and logs how it ended.
func listenMetrics(addr string, reg *prometheus.Registry, log zerolog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	return func() {
		_ = srv.Close()
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Str("addr", addr).Msg("metrics listener")
		}
	}, nil
}

// serveMetrics is listenMetrics for a command that runs without its
// metrics (`dcgpd ocpi`): an address that cannot be bound is logged at
// start.
func serveMetrics(addr string, reg *prometheus.Registry, log zerolog.Logger) (stop func()) {
	stop, err := listenMetrics(addr, reg, log)
	if err != nil {
		log.Warn().Err(err).Msg("metrics not served")
		return func() {}
	}
	return stop
}
