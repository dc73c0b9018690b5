package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/rebalance"
	"github.com/dcgpd/dcgpd/stream/stationstatus"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// The [[rebalance]] entries' streams and bucket.
const (
	statusStream = "DCGP_STATUS"
	riskStream   = "DCGP_RISK"
	riskBucket   = "dcgp_risk"
)

// rebalanceRun is one [[rebalance]] entry in a running daemon.
type rebalanceRun struct {
	cfg config.RebalanceConfig
	job *rebalance.Job
}

// jobConfig is an entry's rebalance configuration, package rebalance's
// defaults for what it leaves out; the samples are kept for at least two
// of the longer bin, its lateness and a sample's hold.
func jobConfig(rc *config.RebalanceConfig, p, r *config.ModelConfig) rebalance.Config {
	c := rebalance.DefaultConfig()
	c.Name, c.Pickups, c.Returns, c.PlanningBins = rc.Name, rc.Pickups, rc.Returns, rc.PlanningBins
	for _, f := range []struct{ v, dst *float64 }{{rc.PickupWeight, &c.PickupWeight}, {rc.ReturnWeight, &c.ReturnWeight},
		{rc.CensorFraction, &c.CensorFraction}, {rc.MinCoverage, &c.MinCoverage}, {rc.UrgencyThreshold, &c.UrgencyThreshold}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	for _, d := range []struct {
		v   config.Duration
		dst *time.Duration
	}{{rc.MaxHold, &c.MaxHold}, {rc.MaxReportAge, &c.MaxReportAge}, {rc.MaxStatusAge, &c.MaxStatusAge}, {rc.RiskHorizon, &c.RiskHorizon}} {
		if d.v.Duration != 0 {
			*d.dst = d.v.Duration
		}
	}
	span := max(p.Bin.Duration+p.Lateness.Duration, r.Bin.Duration+r.Lateness.Duration) + c.MaxHold
	c.Retention = max(c.Retention, 2*span)
	return c
}

// binHook joins a runner to its entry's job: status censors the bins,
// the filtered messages go to the risk step.
type binHook struct{ job *rebalance.Job }

func (h binHook) Closing(model string, names []string, obs []cvi.Obs, start, end time.Time) {
	h.job.Censor(model, names, obs, start, end)
}

func (h binHook) Published(ctx context.Context, model string, names []string, msg *wire.LatentMessage) {
	_ = h.job.Offer(ctx, flowForecast(model, names, msg))
}

// flowForecast is a filtered bin's forecasts as the risk step reads them:
// latent means and variances per horizon, in product order.
func flowForecast(model string, products []string, msg *wire.LatentMessage) *rebalance.FlowForecast {
	f := &rebalance.FlowForecast{Model: model, BinStart: msg.BinStart, BinEnd: msg.BinEnd, Products: products, Missing: msg.Missing}
	for _, fc := range msg.Forecasts {
		mean, vars := make([]float64, len(fc.Estimates)), make([]float64, len(fc.Estimates))
		for i, e := range fc.Estimates {
			mean[i], vars[i] = e.Mean, e.Var
		}
		f.Mean, f.Var = append(f.Mean, mean), append(f.Var, vars)
	}
	return f
}

// riskOut publishes a system's risk through the daemon's publisher:
// messages on <prefix>.risk.<name> (sent again until stored), bucket
// entries on the bucket's subject.
type riskOut struct {
	pub     *natsio.Publisher
	subject string
	log     zerolog.Logger
}

func (o riskOut) PublishRisk(id string, data []byte) {
	o.pub.Publish(o.subject, id, data, func(err error) {
		if err != nil {
			o.log.Warn().Err(err).Str("id", id).Int("bytes", len(data)).Msg("risk message not stored")
		}
	})
}

func (o riskOut) PutRisk(key string, data []byte) {
	if _, err := o.pub.JetStream().PublishMsgAsync(&nats.Msg{Subject: "$KV." + riskBucket + "." + key, Data: data}); err != nil {
		o.log.Debug().Err(err).Str("key", key).Msg("risk bucket entry not stored")
	}
}

// setupRebalanceStreams creates or binds the status input stream (48
// hours), the risk output stream (7 days) and the risk bucket.
func setupRebalanceStreams(ctx context.Context, js jetstream.JetStream, c *config.NATSConfig) error {
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: statusStream, Subjects: []string{c.Prefix + ".status.>"},
		Storage: jetstream.FileStorage, Replicas: c.Replicas, Duplicates: 10 * time.Minute, MaxAge: 48 * time.Hour,
		MaxMsgSize: stationstatus.MaxMessageBytes}); err != nil {
		return fmt.Errorf("status stream %s: %w", statusStream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: riskStream, Subjects: []string{c.Prefix + ".risk.>"},
		Storage: jetstream.FileStorage, Replicas: c.Replicas, Duplicates: 10 * time.Minute, MaxAge: 7 * 24 * time.Hour}); err != nil {
		return fmt.Errorf("risk stream %s: %w", riskStream, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: riskBucket, History: 1, Replicas: c.Replicas,
		Description: "newest risk per rebalanced station, key <name>.<station>"}); err != nil {
		return fmt.Errorf("key-value bucket %s: %w", riskBucket, err)
	}
	return nil
}

// startRebalance, with [[rebalance]] entries, creates their streams,
// joins each entry's two models (the same stations) through a job, and
// reads their status feeds up to now; run the jobs before the runners.
func (d *Daemon) startRebalance(ctx context.Context, js jetstream.JetStream, pub *natsio.Publisher) ([]jetstream.ConsumeContext, error) {
	if len(d.cfg.Rebalance) == 0 {
		return nil, nil
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := natsio.RetrySetup(sctx, func(actx context.Context) error { return setupRebalanceStreams(actx, js, &d.cfg.NATS) }); err != nil {
		return nil, err
	}
	d.statusSink = pub
	for i := range d.cfg.Rebalance {
		rc := d.cfg.Rebalance[i]
		p, r := d.Runner(rc.Pickups), d.Runner(rc.Returns)
		if p == nil || r == nil {
			return nil, fmt.Errorf("rebalance %s: models %s and %s must both run on this instance", rc.Name, rc.Pickups, rc.Returns)
		}
		pn, rn := slices.Clone(p.Products()), slices.Clone(r.Products())
		slices.Sort(pn)
		slices.Sort(rn)
		if !slices.Equal(pn, rn) {
			return nil, fmt.Errorf("rebalance %s: models %s and %s must have the same stations (products)", rc.Name, rc.Pickups, rc.Returns)
		}
		pc, rcfg := p.Config(), r.Config()
		out := riskOut{pub: pub, subject: d.cfg.NATS.Prefix + ".risk." + rc.Name, log: d.log.With().Str("rebalance", rc.Name).Logger()}
		job, err := rebalance.NewJob(jobConfig(&rc, &pc, &rcfg), pn, out, d.rebMet, d.log)
		if err != nil {
			return nil, fmt.Errorf("rebalance %s: %w", rc.Name, err)
		}
		p.SetBinHook(binHook{job})
		r.SetBinHook(binHook{job})
		rr := &rebalanceRun{cfg: rc, job: job}
		d.restoreRanking(ctx, js, rr)
		d.rebal = append(d.rebal, rr)
	}
	return d.consumeStatus(ctx, js)
}

// consumeStatus reads each entry's status subject from the stored past
// (the job's retention) into its tracker and keeps reading; it returns
// once every tracker has caught up with what the stream held at the
// start (at most 30 s each), so that bins replayed after a restart see
// the status they saw before.
func (d *Daemon) consumeStatus(ctx context.Context, js jetstream.JetStream) ([]jetstream.ConsumeContext, error) {
	var out []jetstream.ConsumeContext
	for _, rr := range d.rebal {
		subject := d.cfg.NATS.Prefix + ".status." + rr.cfg.StatusFeed()
		cc, err := d.consumePast(ctx, js, statusStream, subject, rr.job.Config().Retention, rr.cfg.Name, func(msg jetstream.Msg) { d.ingestStatus(rr, msg) })
		if cc != nil {
			out = append(out, cc)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// ingestStatus decodes one status message into the job's tracker, or
// refuses it like any input: counted, logged (rate-limited) and
// published on <prefix>.rejected.<name>.
func (d *Daemon) ingestStatus(rr *rebalanceRun, msg jetstream.Msg) {
	m, err := stationstatus.Decode(msg.Data())
	if err == nil && m.Feed != rr.cfg.StatusFeed() {
		err = &stationstatus.Error{Reason: wire.ReasonModel, Detail: fmt.Sprintf("status of feed %q on %s", m.Feed, msg.Subject())}
	}
	if err != nil {
		rej := wire.Reject(wire.ReasonMalformed, "%v", err)
		var se *stationstatus.Error
		if errors.As(err, &se) {
			rej = wire.Reject(se.Reason, "station status: %s", se.Detail)
		}
		stream.RejectInput(d.statusSink, d.met, d.log, d.statusLog, rr.cfg.Name, nil, rej)
		return
	}
	rr.job.Ingest(m)
}
