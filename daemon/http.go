package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dcgpd/dcgpd/stream/page"
)

// serveHTTP starts /healthz, /readyz, /metrics and the operator's page.
func (d *Daemon) serveHTTP() (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !d.ready.Load() || d.nc == nil || !d.nc.IsConnected() {
			http.Error(w, "not ready: NATS not connected or consumers not bound", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{}))
	page.Register(mux, d, page.Options{NC: d.nc, Prefix: d.cfg.NATS.Prefix, Log: d.log, Instance: d.instance})
	mux.HandleFunc("/api/risk", d.serveRisk)
	ln, err := net.Listen("tcp", d.cfg.HTTP.Listen)
	if err != nil {
		return nil, fmt.Errorf("http.listen %s: %w", d.cfg.HTTP.Listen, err)
	}
	d.httpAddr = ln.Addr().String()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error().Err(err).Msg("http server")
		}
	}()
	return srv, nil
}
