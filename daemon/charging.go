package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/evsupply"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/ocpi"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// evseStream stores the EVSE statuses of every [[charging]] entry.
const evseStream = "DCGP_EVSE"

// chargingRun is one [[charging]] entry in a running daemon.
type chargingRun struct {
	cfg     config.ChargingConfig
	tracker *evsupply.Tracker
}

// evsupplyConfig is an entry's configuration, package evsupply's
// defaults for what it leaves out; statuses are kept for at least two
// of the model's bin and lateness.
func evsupplyConfig(cc *config.ChargingConfig, m *config.ModelConfig) evsupply.Config {
	c := evsupply.DefaultConfig()
	c.Model = cc.Model
	if cc.CensorFraction != nil {
		c.CensorFraction = *cc.CensorFraction
	}
	if cc.MinCoverage != nil {
		c.MinCoverage = *cc.MinCoverage
	}
	if cc.MaxPollGap.Duration > 0 {
		c.MaxPollGap = cc.MaxPollGap.Duration
	}
	if cc.Retention.Duration > 0 {
		c.Retention = cc.Retention.Duration
	}
	c.Retention = max(c.Retention, 2*(m.Bin.Duration+m.Lateness.Duration)+c.MaxPollGap)
	return c
}

// chargingHook censors a charging model's bins by its EVSE status.
type chargingHook struct {
	tracker *evsupply.Tracker
	met     *evsupply.Metrics
}

func (h chargingHook) Closing(model string, names []string, obs []cvi.Obs, start, end time.Time) {
	h.met.Censoring(model, h.tracker.Censor(names, obs, start, end))
}

func (chargingHook) Published(context.Context, string, []string, *wire.LatentMessage) {}

// startCharging, with [[charging]] entries, creates the EVSE stream (48
// hours), hooks each entry's tracker into its model's runner and reads
// the statuses of the last retention; run it before the runners.
func (d *Daemon) startCharging(ctx context.Context, js jetstream.JetStream, sink stream.Sink) ([]jetstream.ConsumeContext, error) {
	if len(d.cfg.Charging) == 0 {
		return nil, nil
	}
	c := &d.cfg.NATS
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := natsio.RetrySetup(sctx, func(actx context.Context) error {
		_, err := js.CreateOrUpdateStream(actx, jetstream.StreamConfig{Name: evseStream, Subjects: []string{c.Prefix + ".evse.>"},
			Storage: jetstream.FileStorage, Replicas: c.Replicas, Duplicates: 10 * time.Minute, MaxAge: 48 * time.Hour,
			MaxMsgSize: ocpi.MaxMessageBytes})
		if err != nil {
			return fmt.Errorf("EVSE stream %s: %w", evseStream, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	met := evsupply.NewMetrics(d.reg)
	var out []jetstream.ConsumeContext
	for i := range d.cfg.Charging {
		cc := d.cfg.Charging[i]
		r := d.Runner(cc.Model)
		if r == nil {
			return out, fmt.Errorf("charging %s: the model must run on this instance", cc.Model)
		}
		mc := r.Config()
		ec := evsupplyConfig(&cc, &mc)
		if err := ec.Validate(); err != nil {
			return out, err
		}
		run := &chargingRun{cfg: cc, tracker: evsupply.NewTracker(ec, r.Products())}
		r.SetBinHook(chargingHook{tracker: run.tracker, met: met})
		cons, err := d.consumePast(ctx, js, evseStream, c.Prefix+".evse."+cc.Model, ec.Retention, cc.Model,
			func(msg jetstream.Msg) { d.ingestEVSE(run, met, sink, msg) })
		if cons != nil {
			out = append(out, cons)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// ingestEVSE decodes one EVSE message into the entry's tracker, or
// refuses it like any input: counted, logged (rate-limited) and
// published on <prefix>.rejected.<model>.
func (d *Daemon) ingestEVSE(run *chargingRun, met *evsupply.Metrics, sink stream.Sink, msg jetstream.Msg) {
	m, err := ocpi.DecodeMessage(msg.Data())
	if err == nil && m.Model != run.cfg.Model {
		err = &ocpi.MessageError{Reason: wire.ReasonModel, Detail: fmt.Sprintf("EVSE status of model %q on %s", m.Model, msg.Subject())}
	}
	if err != nil {
		rej := wire.Reject(wire.ReasonMalformed, "%v", err)
		var me *ocpi.MessageError
		if errors.As(err, &me) {
			rej = wire.Reject(me.Reason, "EVSE status: %s", me.Detail)
		}
		stream.RejectInput(sink, d.met, d.log, d.statusLog, run.cfg.Model, nil, rej)
		return
	}
	met.Status(run.cfg.Model, run.tracker.Ingest(m))
}
