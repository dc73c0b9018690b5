package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream/rebalance"
)

// restoreRanking reads a system's newest ranking back from the risk
// bucket, so that the page shows it, marked with its age, until the
// first bin after a restart closes (an hour with hourly bins). A bucket
// that cannot be read or holds entries it cannot decode is logged, not
// fatal: the page then waits for the next bin as before.
func (d *Daemon) restoreRanking(ctx context.Context, js jetstream.JetStream, rr *rebalanceRun) {
	log := d.log.With().Str("rebalance", rr.cfg.Name).Logger()
	entries, bad, err := readRiskEntries(ctx, js, rr.cfg.Name)
	if bad != nil {
		log.Warn().Err(bad).Msg("risk bucket entries not decoded; left out of the restored ranking")
	}
	if err != nil {
		log.Warn().Err(err).Msg("last risk ranking not restored from the bucket; the page shows none until the next bin closes")
		return
	}
	rk, dropped, err := rebalance.RankingFromEntries(rr.job.Config(), entries)
	if err != nil {
		log.Warn().Err(err).Msg("last risk ranking not restored from the bucket; the page shows none until the next bin closes")
		return
	}
	if rk == nil {
		return
	}
	rr.job.Restore(rk)
	log.Info().Time("bin_end", rk.BinEnd).Int("stations", len(rk.Stations)).Int("older_entries_left_out", dropped).
		Dur("age", time.Since(rk.BinEnd).Round(time.Second)).Msg("last risk ranking restored from the bucket; shown until the next bin closes")
}

// readRiskEntries reads every entry of system name from the risk bucket;
// bad names the entries it could not decode (left out).
func readRiskEntries(ctx context.Context, js jetstream.JetStream, name string) (entries []rebalance.Entry, bad, err error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(rctx, riskBucket)
	if err != nil {
		return nil, nil, fmt.Errorf("bucket %s: %w", riskBucket, err)
	}
	w, err := kv.WatchFiltered(rctx, []string{name + ".>"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, nil, fmt.Errorf("bucket %s: %w", riskBucket, err)
	}
	defer func() { _ = w.Stop() }()
	var bads []error
	for {
		select {
		case <-rctx.Done():
			return nil, nil, fmt.Errorf("bucket %s: reading %s.>: %w", riskBucket, name, rctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, nil, fmt.Errorf("bucket %s: watcher closed while reading %s.>", riskBucket, name)
			}
			if e == nil { // every stored entry has been read
				return entries, errors.Join(bads...), nil
			}
			var en rebalance.Entry
			if err := json.Unmarshal(e.Value(), &en); err != nil {
				bads = append(bads, fmt.Errorf("bucket %s key %s: %w", riskBucket, e.Key(), err))
				continue
			}
			entries = append(entries, en)
		}
	}
}
