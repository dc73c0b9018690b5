package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Daemon is `dcgpd serve`: one process, many models, NATS in and out.
type Daemon struct {
	cfg     Config
	log     zerolog.Logger
	reg     *prometheus.Registry
	met     *Metrics
	runMu   sync.RWMutex // guards runners (cluster mode changes it)
	runners map[string]*Runner
	order   []*Runner

	emb *Embedded
	nc  *nats.Conn
	// jsStore holds the snapshots when snapshot.store is jetstream.
	jsStore *JetStreamStore
	ready   atomic.Bool
	// natsURL is where other programs reach the server the daemon uses.
	natsURL  string
	httpAddr string
	started  chan struct{}
}

// New builds every configured model (reading products files) without
// touching the network.
func New(cfg Config, log zerolog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, log: log, reg: prometheus.NewRegistry(), runners: map[string]*Runner{}, started: make(chan struct{})}
	d.reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	d.met = NewMetrics(d.reg)
	return d, nil
}

// Started is closed once the daemon is connected, subscribed and serving.
func (d *Daemon) Started() <-chan struct{} { return d.started }

// NATSURL returns the URL of the server the daemon uses (after Started).
func (d *Daemon) NATSURL() string { return d.natsURL }

// HTTPAddr returns the health and metrics address (after Started).
func (d *Daemon) HTTPAddr() string { return d.httpAddr }

// Runner returns a model's runner, or nil.
func (d *Daemon) Runner(name string) *Runner {
	d.runMu.RLock()
	defer d.runMu.RUnlock()
	return d.runners[name]
}

// setRunner records (r nil: removes) the runner of a model this instance
// owns.
func (d *Daemon) setRunner(name string, r *Runner) {
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
	if d.cfg.NATS.URL == "" {
		auth, err := embeddedAuth(&d.cfg.NATS)
		if err != nil {
			return err
		}
		emb, err := StartEmbeddedAuth(d.cfg.NATS.Listen, d.cfg.NATS.StoreDir, auth, d.log)
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
		srv, err := d.serveHTTP()
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = srv.Shutdown(sctx)
			cancel()
		}()
	}
	sink := newNATSSink(d.nc, js, d.cfg.NATS.Prefix, d.log)
	if d.cfg.Cluster.Enabled {
		return d.serveCluster(ctx, js, sink)
	}
	if err := d.startModels(ctx, sink); err != nil {
		return err
	}
	svc, err := startService(d.nc, d)
	if err != nil {
		return err
	}
	defer func() { _ = svc.Stop() }()
	rctx, stopRunners := context.WithCancel(context.Background())
	var wg sync.WaitGroup
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
	for _, cc := range consumers {
		cc.ctx.Stop()
	}
	stopRunners()
	wg.Wait()
	d.flush(js, sink)
	return nil
}

// serveCluster is Run's cluster mode: models come and go with their
// leases (cluster.go).
func (d *Daemon) serveCluster(ctx context.Context, js jetstream.JetStream, sink *natsSink) error {
	svc, err := startService(d.nc, d)
	if err != nil {
		return err
	}
	defer func() { _ = svc.Stop() }()
	err = d.runCluster(ctx, js, sink)
	d.ready.Store(false)
	d.flush(js, sink)
	return err
}

// connect opens the NATS connection (in process to an embedded server)
// and creates or binds the streams and bucket.
func (d *Daemon) connect(ctx context.Context) (jetstream.JetStream, error) {
	c := &d.cfg.NATS
	nc, err := Connect(c, d.emb, "dcgpd", d.log)
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
	err = retrySetup(sctx, func(actx context.Context) error {
		_, err := setupStreams(actx, js, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	if d.cfg.Snapshot.Store == "jetstream" && d.cfg.Snapshot.Dir != "off" {
		err = retrySetup(sctx, func(actx context.Context) (err error) {
			d.jsStore, err = NewJetStreamStore(actx, js, c.Replicas)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return js, nil
}

// retrySetup runs a stream or bucket setup in attempts of at most 3 s
// until it succeeds or ctx ends: on a replicated cluster, instances that
// create the same stream at the same moment can each wait for an answer
// that never comes (measured: three concurrent creates of an R3 stream
// all timed out at 30 s; a second attempt succeeded at once).
func retrySetup(ctx context.Context, setup func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := setup(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
}

// startModels builds every model's runner and restores it from its
// snapshot.
func (d *Daemon) startModels(ctx context.Context, sink Sink) error {
	for _, m := range d.cfg.Models {
		r, err := NewRunner(&d.cfg, m, sink, d.log, d.met)
		if err == nil {
			err = checkOutputSize(m, r.Products(), d.nc.MaxPayload())
		}
		if err != nil {
			return fmt.Errorf("model %s: %w", m.Name, err)
		}
		if d.jsStore != nil && r.store != nil {
			r.store = d.jsStore
		}
		d.runners[m.Name] = r
		d.order = append(d.order, r)
	}
	for _, r := range d.order {
		if err := r.Restore(ctx); err != nil {
			return err
		}
	}
	return nil
}

// flush waits (bounded) for the server to acknowledge the last
// publications and drains the connection.
func (d *Daemon) flush(js jetstream.JetStream, sink *natsSink) {
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(10 * time.Second):
		d.log.Warn().Msg("some publications were not acknowledged before shutdown")
	}
	sink.close()
	_ = d.nc.Drain()
}

// consumer is one model's durable pull consumer.
type consumer struct {
	r    *Runner
	cons jetstream.Consumer
	ctx  jetstream.ConsumeContext
}

// pullBuffer bounds the input a model's consumer buffers in the client
// by bytes, not messages: the client drops messages past its pending
// limit (64 MiB) as a "slow consumer", and 2,000 whole-bin messages of a
// 2,000-station city are 200 MiB. The server's max_ack_pending still
// bounds their number.
var pullBuffer = jetstream.PullMaxBytes(16 << 20)

// consume binds each model's durable pull consumer where the model's
// state ends and feeds its messages to the model's runner.
func (d *Daemon) consume(ctx context.Context, js jetstream.JetStream) ([]*consumer, error) {
	var out []*consumer
	for _, r := range d.order {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cons, err := d.bindConsumer(cctx, js, r)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("consumer for model %s: %w", r.Name(), err)
		}
		cc, err := cons.Consume(func(msg jetstream.Msg) { d.deliver(ctx, r, msg, msg) }, pullBuffer)
		if err != nil {
			return nil, fmt.Errorf("consuming for model %s: %w", r.Name(), err)
		}
		out = append(out, &consumer{r: r, cons: cons, ctx: cc})
	}
	return out, nil
}

// deliver decodes one input message and submits it to the model's
// runner, acknowledged later through ack.
func (d *Daemon) deliver(ctx context.Context, r *Runner, msg jetstream.Msg, ack Acker) {
	var seq uint64
	if md, err := msg.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	m, err := DecodeObs(msg.Data())
	if err == nil && m.Model != r.Name() {
		err = reject(ReasonModel, "message for model %q on %s", m.Model, msg.Subject())
	}
	if err != nil {
		var rej *Rejection
		if !errors.As(err, &rej) {
			rej = reject(ReasonMalformed, "%v", err)
		}
		m = &ObsMessage{rejected: rej}
	}
	_ = r.Submit(ctx, m, seq, ack) // an error: shutting down, the message is redelivered later
}

// bindConsumer creates the model's durable consumer so that its first
// message is the first one the model's state does not hold: right after
// the snapshot's sequence (or, with snapshots off, after the consumer's
// acknowledged floor). An existing consumer is replaced rather than
// resumed: messages it delivered to a killed process would otherwise wait
// out the whole ack_wait before redelivery, and its acknowledgements may
// be ahead of a snapshot that was refused. The stream keeps acknowledged
// messages, so nothing after the state is skipped.
func (d *Daemon) bindConsumer(ctx context.Context, js jetstream.JetStream, r *Runner) (jetstream.Consumer, error) {
	c := &d.cfg.NATS
	name := "dcgpd_" + r.Name()
	cfg := jetstream.ConsumerConfig{Durable: name, FilterSubject: c.Prefix + ".obs." + r.Name(),
		AckPolicy: jetstream.AckAllPolicy, AckWait: c.AckWait.Duration, MaxAckPending: c.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy, MaxDeliver: -1}
	stream, err := js.Stream(ctx, obsStream)
	if err != nil {
		return nil, err
	}
	after := r.Applied()
	created := stream.CachedInfo().Created.UnixNano()
	if after > 0 && r.stream != 0 && r.stream != created {
		return nil, fmt.Errorf("%w: it read input stream %s created %s, but the server's was created %s (the stream was replaced; move the snapshot away to start afresh)",
			ErrSnapshotMismatch, obsStream, time.Unix(0, r.stream).UTC().Format(time.RFC3339Nano), stream.CachedInfo().Created.UTC().Format(time.RFC3339Nano))
	}
	r.stream = created
	if old, err := stream.Consumer(ctx, name); err == nil {
		info, err := old.Info(ctx)
		if err != nil {
			return nil, err
		}
		if r.store == nil {
			after = info.AckFloor.Stream
		}
		if err := stream.DeleteConsumer(ctx, name); err != nil {
			return nil, err
		}
		d.log.Info().Str("model", r.Name()).Uint64("ack_floor", info.AckFloor.Stream).Uint64("resume_after", after).Msg("input consumer re-created at the model's state")
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, err
	}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
		if si, err := stream.Info(ctx); err == nil && si.State.FirstSeq > after+1 {
			d.log.Error().Str("model", r.Name()).Uint64("state", after).Uint64("first", si.State.FirstSeq).
				Msg("input after the model's state has left the stream (its limits removed it): the model continues with a gap")
		}
	}
	return stream.CreateOrUpdateConsumer(ctx, cfg)
}

// watchPending samples each consumer's backlog for the metrics.
func (d *Daemon) watchPending(ctx context.Context, cs []*consumer) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, c := range cs {
				ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
				info, err := c.cons.Info(ictx)
				cancel()
				if err == nil {
					d.met.pending.WithLabelValues(c.r.Name()).Set(float64(info.NumPending + uint64(info.NumAckPending)))
				}
			}
		}
	}
}

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
	d.addPageRoutes(mux)
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
