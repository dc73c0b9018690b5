package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/feedflow"
	"github.com/dcgpd/dcgpd/stream/gbfs"
	"github.com/dcgpd/dcgpd/stream/stationstatus"
	"github.com/dcgpd/dcgpd/stream/statusflow"
)

// feedSource is a [[rebalance]] entry's GBFS feed polled in process: the
// feed's stations become both models' products at start, its status is
// published on <prefix>.status.<feed> as `dcgpd gbfs` would, and each
// stored status message is handed to the entry's flow deriver, whose
// per-bin pickups and returns go to the models' input subjects.
type feedSource struct {
	rc     *config.RebalanceConfig
	poller *gbfs.Poller
	log    zerolog.Logger

	mu sync.Mutex // guards the fields below (the page reads them)
	// stations is the number of stations served (0 until resolved);
	// stationsErr the last failure to read them.
	stations    int
	stationsErr string
	// firstStatus and lastStatus are the times of the first and newest
	// status snapshots stored.
	firstStatus, lastStatus time.Time
	flows                   *feedflow.Flows
	// lag is how long after a bin's end its flows are derived.
	lag time.Duration
	// flowErrors counts derived messages that could not be published;
	// stats is the derivation's counts as last exported to met.
	flowErrors int
	stats      feedflow.Stats
	met        *feedMetrics
}

// pollerConfig is an entry's poller configuration: package gbfs's
// defaults for what it leaves out.
func pollerConfig(rc *config.RebalanceConfig, prefix string) gbfs.Config {
	c := gbfs.DefaultConfig()
	c.URL, c.Feed, c.Prefix = rc.GBFSURL, rc.StatusFeed(), prefix
	if rc.GBFSLanguage != "" {
		c.Language = rc.GBFSLanguage
	}
	if v := rc.GBFSMinInterval.Duration; v > 0 {
		c.MinInterval = v
		c.MaxBackoff = max(c.MaxBackoff, v)
		c.RefreshInterval = max(c.RefreshInterval, v)
	}
	if v := rc.GBFSMaxInterval.Duration; v > 0 {
		c.MaxInterval = v
	}
	c.MaxInterval = max(c.MaxInterval, c.MinInterval)
	if v := rc.GBFSTimeout.Duration; v > 0 {
		c.Timeout = v
	}
	return c
}

// flowConfig is an entry's flow derivation on the pickups model's grid:
// package statusflow's defaults for what it leaves out.
func flowConfig(rc *config.RebalanceConfig, m *config.ModelConfig) statusflow.Config {
	c := statusflow.DefaultConfig()
	c.Origin, c.Bin = m.Origin, m.Bin.Duration
	if v := rc.FlowMaxGap.Duration; v > 0 {
		c.MaxGap = v
	}
	if v := rc.FlowTruckWindow.Duration; v > 0 {
		c.TruckWindow = v
	}
	c.DetectTrucks = !rc.FlowNoTrucks
	return c
}

// prepareFeeds builds a poller for each entry with a gbfs_url and gives
// its models the feed's stations as products (read from the stations
// file of an earlier start, else from the feed, retried until ctx ends).
func (d *Daemon) prepareFeeds(ctx context.Context) error {
	for i := range d.cfg.Rebalance {
		rc := &d.cfg.Rebalance[i]
		if !rc.FromFeed() {
			continue
		}
		if d.gbfsMet == nil {
			d.gbfsMet, d.feedMet = gbfs.NewMetrics(d.reg), newFeedMetrics(d.reg)
		}
		log := d.log.With().Str("rebalance", rc.Name).Str("gbfs", rc.GBFSURL).Logger()
		p, err := gbfs.NewPoller(pollerConfig(rc, d.cfg.NATS.Prefix), nil, d.gbfsMet, log)
		if err != nil {
			return fmt.Errorf("rebalance %s: %w", rc.Name, err)
		}
		fs := &feedSource{rc: rc, poller: p, log: log, met: d.feedMet}
		d.feedMu.Lock()
		d.feeds = append(d.feeds, fs)
		d.feedMu.Unlock()
		if err := d.feedProducts(ctx, fs); err != nil {
			return err
		}
	}
	return nil
}

// feedProducts sets the products of fs's models that list none to the
// feed's stations.
func (d *Daemon) feedProducts(ctx context.Context, fs *feedSource) error {
	var models []*config.ModelConfig
	for i := range d.cfg.Models {
		m := &d.cfg.Models[i]
		if (m.Name == fs.rc.Pickups || m.Name == fs.rc.Returns) && m.Products == "" && len(m.Product) == 0 {
			models = append(models, m)
		}
	}
	path, n, err := d.feedStations(ctx, fs)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	fs.stations = n
	fs.mu.Unlock()
	for _, m := range models {
		m.Products = path
	}
	return nil
}

// startFeeds runs each entry's poller, publishing through JetStream and
// into the entry's flow deriver, until ctx ends or the returned function
// (idempotent) stops them and waits.
func (d *Daemon) startFeeds(ctx context.Context, js jetstream.JetStream) (func(), error) {
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	for _, fs := range d.feeds {
		if err := d.startFeed(fctx, js, fs, &wg); err != nil {
			stop()
			return stop, err
		}
	}
	return stop, nil
}

// startFeed builds fs's flow deriver and runs its poller on wg.
func (d *Daemon) startFeed(ctx context.Context, js jetstream.JetStream, fs *feedSource, wg *sync.WaitGroup) error {
	p, r := d.Runner(fs.rc.Pickups), d.Runner(fs.rc.Returns)
	if p == nil || r == nil {
		return fmt.Errorf("rebalance %s: models %s and %s must both run on this instance", fs.rc.Name, fs.rc.Pickups, fs.rc.Returns)
	}
	pc := p.Config()
	flows, err := feedflow.New(feedflow.Config{Flow: flowConfig(fs.rc, &pc), Pickups: fs.rc.Pickups, Returns: fs.rc.Returns,
		Prefix: d.cfg.NATS.Prefix, Stations: p.Products()})
	if err != nil {
		return fmt.Errorf("rebalance %s: %w", fs.rc.Name, err)
	}
	fs.mu.Lock()
	fs.flows, fs.lag = flows, flows.Lag()
	fs.mu.Unlock()
	fs.poller.SetPublisher(teePublisher{next: gbfs.JetStreamPublisher{JS: js}, fs: fs, js: js})
	fs.log.Info().Int("stations", fs.stations).Dur("bin", pc.Bin.Duration).Dur("flow_lag", fs.lag).
		Msg("polling the GBFS feed in process: status on " + d.cfg.NATS.Prefix + ".status." + fs.rc.StatusFeed() + ", derived pickups and returns on the models' input")
	wg.Go(func() { _ = fs.poller.Run(ctx) })
	return nil
}

// teePublisher stores a status message, then derives the flows it
// completes and publishes them on the models' input subjects.
type teePublisher struct {
	next gbfs.Publisher
	fs   *feedSource
	js   jetstream.JetStream
}

func (t teePublisher) Publish(ctx context.Context, subject, msgID string, data []byte) error {
	if err := t.next.Publish(ctx, subject, msgID, data); err != nil {
		return err
	}
	m, err := stationstatus.Decode(data)
	if err != nil { // the poller encoded it: not expected
		t.fs.log.Warn().Err(err).Str("id", msgID).Msg("own status message not readable; no flows from it")
		return nil
	}
	t.fs.mu.Lock()
	defer t.fs.mu.Unlock()
	if t.fs.firstStatus.IsZero() {
		t.fs.firstStatus = m.At
	}
	t.fs.lastStatus = m.At
	outs, err := t.fs.flows.Take(m)
	if err != nil {
		t.fs.log.Warn().Err(err).Msg("flows not derived from this status")
	}
	st := t.fs.flows.Stats()
	t.fs.met.add(t.fs.rc.Name, t.fs.stats, st)
	t.fs.stats = st
	for _, o := range outs {
		msg := nats.NewMsg(o.Subject)
		msg.Data = o.Data
		msg.Header.Set(jetstream.MsgIDHeader, o.MsgID)
		if _, err := t.js.PublishMsg(ctx, msg); err != nil {
			t.fs.flowErrors++
			t.fs.met.unsent.WithLabelValues(t.fs.rc.Name).Inc()
			t.fs.log.Warn().Err(err).Str("id", o.MsgID).Msg("derived flow not stored; its bin closes without it")
		}
	}
	return nil
}
