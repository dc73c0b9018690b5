package daemon

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/internal/ratelimit"
	"github.com/dcgpd/dcgpd/snapshot/jsstore"
	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/cluster"
	"github.com/dcgpd/dcgpd/stream/gbfs"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/query"
	"github.com/dcgpd/dcgpd/stream/rebalance"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// Daemon is `dcgpd serve`: one process, many models, NATS in and out.
type Daemon struct {
	cfg     config.Config
	log     zerolog.Logger
	reg     *prometheus.Registry
	met     *stream.Metrics
	runMu   sync.RWMutex // guards runners (cluster mode changes it)
	runners map[string]*stream.Runner
	order   []*stream.Runner

	emb *natsio.Embedded
	nc  *nats.Conn
	// jsStore holds the snapshots when snapshot.store is jetstream.
	jsStore *jsstore.Store
	// instance is this instance's name in cluster mode ("" otherwise);
	// dir finds which instance runs a model (cluster mode).
	instance string
	dir      *cluster.Directory
	ready    atomic.Bool
	// natsURL is where other programs reach the server the daemon uses.
	natsURL  string
	httpAddr string
	started  chan struct{}

	// The [[rebalance]] entries (rebalance.go).
	rebal      []*rebalanceRun
	rebMet     *rebalance.Metrics
	statusSink stream.Sink
	statusLog  *ratelimit.Limiter

	// The GBFS feeds polled in process (feed.go).
	feedMu  sync.Mutex // guards feeds (the page reads it while they start)
	feeds   []*feedSource
	gbfsMet *gbfs.Metrics
	feedMet *feedMetrics
	// replayEnd is, per model, the input stream's last sequence when its
	// consumer was bound: input up to it may have been processed before
	// (duplicates.go).
	replayEnd sync.Map
}

// New builds every configured model (reading products files) without
// touching the network.
func New(cfg config.Config, log zerolog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, log: log, reg: prometheus.NewRegistry(), runners: map[string]*stream.Runner{}, started: make(chan struct{})}
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.met = stream.NewMetrics(d.reg)
	d.rebMet = rebalance.NewMetrics(d.reg)
	d.statusLog = ratelimit.New(20, time.Minute)
	if cfg.Cluster.Enabled {
		d.instance = cfg.Cluster.InstanceName()
	}
	return d, nil
}

// Started is closed once the daemon is connected, subscribed and serving.
func (d *Daemon) Started() <-chan struct{} { return d.started }

// NATSURL returns the URL of the server the daemon uses (after Started).
func (d *Daemon) NATSURL() string { return d.natsURL }

// HTTPAddr returns the health and metrics address (after Started).
func (d *Daemon) HTTPAddr() string { return d.httpAddr }

// Runner returns a model's runner, or nil.
func (d *Daemon) Runner(name string) *stream.Runner {
	d.runMu.RLock()
	defer d.runMu.RUnlock()
	return d.runners[name]
}

// Runners returns the runners of the models this instance runs now, in
// configuration order (in cluster mode they come and go with the leases).
func (d *Daemon) Runners() []*stream.Runner {
	d.runMu.RLock()
	defer d.runMu.RUnlock()
	var out []*stream.Runner
	for _, m := range d.cfg.Models {
		if r := d.runners[m.Name]; r != nil {
			out = append(out, r)
		}
	}
	return out
}

// Models lists every configured model, in configuration order.
func (d *Daemon) Models() []string {
	out := make([]string, len(d.cfg.Models))
	for i, m := range d.cfg.Models {
		out[i] = m.Name
	}
	return out
}

// Where returns the instance that runs a model this instance does not
// run, from the leases: "" outside cluster mode, when no instance holds
// the model's lease, or when this one does (the model is starting here).
func (d *Daemon) Where(ctx context.Context, model string) string {
	if d.dir == nil {
		return ""
	}
	inst, err := d.dir.Owner(ctx, model)
	if err != nil || inst == d.instance {
		return ""
	}
	return inst
}

// Owned records (r nil: removes) the runner of a model this instance
// owns.
func (d *Daemon) Owned(name string, r *stream.Runner) {
	d.runMu.Lock()
	defer d.runMu.Unlock()
	if r == nil {
		delete(d.runners, name)
	} else {
		d.runners[name] = r
	}
}

// Run connects (starting an embedded server if no URL is configured),
// creates or binds the streams, restores every model from its snapshot,
// binds the consumers and query service, and processes input until ctx
// ends; then it stops pulling, lets each model snapshot and acknowledge
// what it holds, waits for publish acknowledgements and closes.
func (d *Daemon) Run(ctx context.Context) error {
	unlock, err := d.lockDirs()
	if err != nil {
		return err
	}
	defer unlock()
	if d.cfg.NATS.URL == "" {
		auth, err := natsio.EmbeddedAuthOf(&d.cfg.NATS)
		if err != nil {
			return err
		}
		emb, err := natsio.StartEmbeddedAuth(d.cfg.NATS.Listen, d.cfg.NATS.StoreDir, auth, d.log)
		if err != nil {
			return err
		}
		d.emb = emb
		defer emb.Shutdown()
	}
	js, err := d.connect(ctx)
	if err != nil {
		return err
	}
	defer d.nc.Close()
	// Health and metrics answer from here on; /readyz stays "not ready"
	// until every model is restored and its consumer bound.
	if d.cfg.HTTP.Listen != "off" {
		stopHTTP, err := d.serveHTTP(ctx)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	// a feed's stations become its models' products before anything reads them
	if err := d.prepareFeeds(ctx); err != nil {
		return err
	}
	sink := natsio.NewPublisher(d.nc, js, d.cfg.NATS.Prefix, d.log)
	d.countDuplicates(sink)
	uctx, stopUnknown := context.WithCancel(ctx)
	var unknown sync.WaitGroup
	unknown.Go(func() { d.watchUnknownInput(uctx, js, sink) })
	defer func() {
		stopUnknown()
		unknown.Wait()
	}()
	if d.cfg.Cluster.Enabled {
		return d.serveCluster(ctx, js, sink)
	}
	if err := d.startModels(ctx, sink); err != nil {
		return err
	}
	svc, err := query.Start(d.nc, d, d.instance)
	if err != nil {
		return err
	}
	defer func() { _ = svc.Stop() }()
	statusCons, stopFeeds, err := d.startStatusInputs(ctx, js, sink)
	if err != nil {
		return err
	}
	defer stopFeeds()
	rctx, stopRunners := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, rr := range d.rebal {
		wg.Go(func() { _ = rr.job.Run(rctx) })
	}
	for _, r := range d.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = r.Run(rctx)
		}()
	}
	consumers, err := d.consume(ctx, js)
	if err != nil {
		stopRunners()
		wg.Wait()
		return err
	}
	d.ready.Store(true)
	close(d.started)
	d.log.Info().Int("models", len(d.order)).Str("nats", d.natsURL).Str("http", d.httpAddr).Msg("dcgpd serving")
	go d.watchPending(ctx, consumers)
	<-ctx.Done()
	d.ready.Store(false)
	d.log.Info().Msg("shutting down: stop pulling, snapshot, acknowledge, flush")
	stopFeeds()
	for _, cc := range consumers {
		cc.ctx.Stop()
	}
	for _, cc := range statusCons {
		cc.Stop()
	}
	stopRunners()
	wg.Wait()
	d.flush(js, sink)
	return nil
}

// connect opens the NATS connection (in process to an embedded server)
// and creates or binds the streams and bucket.
func (d *Daemon) connect(ctx context.Context) (jetstream.JetStream, error) {
	c := &d.cfg.NATS
	nc, err := natsio.Connect(c, d.emb, "dcgpd", d.log)
	if err != nil {
		return nil, err
	}
	d.nc = nc
	d.natsURL = nc.ConnectedUrlRedacted()
	if d.emb != nil {
		d.natsURL = d.emb.ClientURL()
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = natsio.RetrySetup(sctx, func(actx context.Context) error {
		_, err := natsio.SetupStreams(actx, js, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	if d.cfg.Snapshot.Store == "jetstream" && d.cfg.Snapshot.Dir != "off" {
		err = natsio.RetrySetup(sctx, func(actx context.Context) (err error) {
			d.jsStore, err = jsstore.New(actx, js, c.Replicas)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if d.cfg.Cluster.Enabled {
		d.dir = cluster.NewDirectory(js)
	}
	return js, nil
}

// startModels builds every model's runner and restores it from its
// snapshot.
func (d *Daemon) startModels(ctx context.Context, sink stream.Sink) error {
	for _, m := range d.cfg.Models {
		r, err := d.NewRunner(m, sink, d.log)
		if err != nil {
			return err
		}
		if d.jsStore != nil && r.Store() != nil {
			r.SetStore(d.jsStore)
		}
		d.Owned(m.Name, r)
		d.order = append(d.order, r)
	}
	for _, r := range d.order {
		if err := r.Restore(ctx); err != nil {
			return err
		}
	}
	return nil
}

// NewRunner builds model m's runner publishing through sink, refusing a
// model whose largest estimate message the server would not take.
func (d *Daemon) NewRunner(m config.ModelConfig, sink stream.Sink, log zerolog.Logger) (*stream.Runner, error) {
	r, err := stream.NewRunner(&d.cfg, m, sink, log, d.met)
	if err == nil {
		err = wire.CheckOutputSize(m.Name, r.Products(), m.Horizon, d.nc.MaxPayload())
	}
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", m.Name, err)
	}
	return r, nil
}

// flush waits (bounded) for the server to acknowledge the last
// publications and drains the connection.
func (d *Daemon) flush(js jetstream.JetStream, sink *natsio.Publisher) {
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(10 * time.Second):
		d.log.Warn().Msg("some publications were not acknowledged before shutdown")
	}
	sink.Close()
	_ = d.nc.Drain()
}
