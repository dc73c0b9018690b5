package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dcgpd/dcgpd/internal/ratelimit"
	"github.com/dcgpd/dcgpd/stream/page"
)

// serveHTTP starts /healthz, /readyz, /metrics and the operator's page:
// with [http] credentials every route but the two probes requires them,
// and with a certificate it serves HTTPS. The page's backfills run under
// ctx; stop shuts the server down (at most 5 s), ends them and waits
// for them.
func (d *Daemon) serveHTTP(ctx context.Context) (stop func(), err error) {
	auth, err := newHTTPAuth(&d.cfg.HTTP)
	if err != nil {
		return nil, err
	}
	tlsConf, err := httpTLS(&d.cfg.HTTP)
	if err != nil {
		return nil, err
	}
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
	pctx, stopPage := context.WithCancel(ctx)
	pageWait := page.Register(mux, d, page.Options{NC: d.nc, Prefix: d.cfg.NATS.Prefix, Log: d.log, Instance: d.instance, Context: pctx})
	mux.HandleFunc("/api/risk", d.serveRisk)
	ln, err := net.Listen("tcp", d.cfg.HTTP.Listen)
	if err != nil {
		stopPage()
		return nil, fmt.Errorf("http.listen %s: %w", d.cfg.HTTP.Listen, err)
	}
	d.httpAddr = ln.Addr().String()
	authLog := ratelimit.New(20, time.Minute)
	srv := newHTTPServer(auth.wrap(mux, func(r *http.Request, err error) {
		if n, ok := authLog.Allow(); ok {
			d.log.Warn().Str("remote", r.RemoteAddr).Str("path", r.URL.Path).Int("suppressed", n).Err(err).Msg("http: request refused")
		}
	}, "/healthz", "/readyz"))
	// net/http's own errors (a TLS handshake refused, a plain request on
	// the HTTPS port) go to the daemon's log, not to stderr.
	srv.ErrorLog = stdlog.New(d.log.With().Str("component", "http").Logger(), "", 0)
	if tlsConf != nil {
		srv.TLSConfig = tlsConf
		ln = tls.NewListener(ln, tlsConf)
	}
	d.log.Info().Str("http", d.httpAddr).Bool("tls", tlsConf != nil).Bool("auth", auth != nil).Msg("http listening")
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error().Err(err).Msg("http server")
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
		stopPage()
		pageWait()
	}, nil
}
