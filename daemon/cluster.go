package daemon

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream/cluster"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/query"
)

// serveCluster is Run's cluster mode: models come and go with their
// leases (package cluster); the daemon is the cluster's Host.
func (d *Daemon) serveCluster(ctx context.Context, js jetstream.JetStream, sink *natsio.Publisher) error {
	svc, err := query.Start(d.nc, d, d.instance)
	if err != nil {
		return err
	}
	defer func() { _ = svc.Stop() }()
	k := &d.cfg.Cluster
	err = cluster.Run(ctx, cluster.Options{Cluster: *k, NATS: d.cfg.NATS, Models: d.cfg.Models, JS: js, Publisher: sink,
		Store: d.jsStore, Registry: d.reg, Log: d.log, Serving: func(instance string) {
			d.ready.Store(true)
			close(d.started)
			d.log.Info().Str("instance", instance).Int("models", len(d.cfg.Models)).Str("nats", d.natsURL).Str("http", d.httpAddr).
				Dur("lease", k.Lease.Duration).Msg("dcgpd serving")
		}}, d)
	d.ready.Store(false)
	d.flush(js, sink)
	return err
}
