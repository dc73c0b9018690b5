package main

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// serveMetrics serves reg's metrics on /metrics at addr (nothing when
// addr is empty) for an input adapter (`dcgpd gbfs`, `dcgpd ocpi`); the
// returned function stops the listener and logs how it ended.
func serveMetrics(addr string, reg *prometheus.Registry, log zerolog.Logger) (stop func()) {
	if addr == "" {
		return func() {}
	}
	srv := &http.Server{Addr: addr, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	return func() {
		_ = srv.Close()
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Msg("metrics listener")
		}
	}
}
