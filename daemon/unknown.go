package daemon

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// unknownInputEvery is how often the input stream's subjects are checked
// for models the configuration does not have.
const unknownInputEvery = 5 * time.Second

// watchUnknownInput reports, every unknownInputEvery until ctx ends,
// input the stream stored for a model this configuration does not have:
// its subject <prefix>.obs.<model> is captured by DCGP_OBS, but no
// consumer reads it. Each new batch is counted
// (dcgpd_observations_rejected_total{reason="unknown_model"}), logged at
// the rejections' rate and rejected on <prefix>.rejected.<model>; the
// messages stay in the stream. It reads the stream's per-subject counts,
// so it costs one request per round, not a copy of the input. In cluster
// mode only the instance owning the first configured model reports.
func (d *Daemon) watchUnknownInput(ctx context.Context, js jetstream.JetStream, sink stream.Sink) {
	prefix := d.cfg.NATS.Prefix + ".obs."
	known := map[string]bool{}
	names := make([]string, 0, len(d.cfg.Models))
	for _, m := range d.cfg.Models {
		known[m.Name] = true
		names = append(names, m.Name)
	}
	slices.Sort(names)
	seen := map[string]uint64{} // subject -> messages already reported
	t := time.NewTicker(unknownInputEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if d.cfg.Cluster.Enabled && (len(d.cfg.Models) == 0 || d.Runner(d.cfg.Models[0].Name) == nil) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, unknownInputEvery)
		subjects, err := obsSubjects(cctx, js, prefix)
		cancel()
		if err != nil {
			d.log.Debug().Err(err).Msg("input subjects not read")
			continue
		}
		for subj, n := range subjects {
			model := strings.TrimPrefix(subj, prefix)
			if known[model] {
				continue
			}
			prev := seen[subj]
			if n < prev { // purged meanwhile
				prev = 0
			}
			seen[subj] = n
			if n == prev {
				continue
			}
			rej := wire.Reject(wire.ReasonModel, "%d input messages stored on %s: no model %q is configured (models: %s); they stay in %s unread",
				n-prev, subj, model, strings.Join(names, ", "), natsio.ObsStream)
			stream.RejectStored(sink, d.met, d.log, model, int(n-prev), rej)
		}
	}
}

// obsSubjects returns the input stream's message count per subject.
func obsSubjects(ctx context.Context, js jetstream.JetStream, prefix string) (map[string]uint64, error) {
	st, err := js.Stream(ctx, natsio.ObsStream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, err
	}
	return info.State.Subjects, nil
}
