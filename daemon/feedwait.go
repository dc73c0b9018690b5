package daemon

import (
	"fmt"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/rebalance"
)

// feedOf returns the in-process feed of entry name, or nil.
func (d *Daemon) feedOf(name string) *feedSource {
	d.feedMu.Lock()
	defer d.feedMu.Unlock()
	for _, fs := range d.feeds {
		if fs.rc.Name == name {
			return fs
		}
	}
	return nil
}

// startingViews are the entries' views before their models run (the
// daemon is reading a feed's stations): each says what it waits for.
func (d *Daemon) startingViews() []RiskView {
	out := []RiskView{}
	for i := range d.cfg.Rebalance {
		rc := &d.cfg.Rebalance[i]
		v := RiskView{Name: rc.Name, Pickups: rc.Pickups, Returns: rc.Returns, Stations: []RiskViewEntry{}, Statuses: map[string]int{}}
		v.Waiting = "starting: the models are being built"
		if rc.FromFeed() {
			v.Waiting = "waiting for station_information from " + rc.GBFSURL + " (the stations become the models' products)"
			if fs := d.feedOf(rc.Name); fs != nil {
				fs.mu.Lock()
				if fs.stationsErr != "" {
					v.Waiting += "; last attempt: " + fs.stationsErr
				}
				fs.mu.Unlock()
			}
		}
		out = append(out, v)
	}
	return out
}

// waitingFor says what an entry without a ranking yet waits for: the
// first status, or the first bin's end and, with an in-process feed,
// when its flows will have been derived.
func (d *Daemon) waitingFor(rc *config.RebalanceConfig, job *rebalance.Job, origin time.Time, width time.Duration) string {
	if fs := d.feedOf(rc.Name); fs != nil {
		fs.mu.Lock()
		first, lag, stations := fs.firstStatus, fs.lag, fs.stations
		fs.mu.Unlock()
		if first.IsZero() {
			return fmt.Sprintf("waiting for the first station_status from %s (%d stations served)", rc.GBFSURL, stations)
		}
		end := binEnd(first, origin, width)
		return fmt.Sprintf("first bin closes at %s UTC; its pickups and returns are derived from the polls by about %s UTC (flow lag %s), then the ranking",
			clock(end), clock(end.Add(lag)), humanAge(lag))
	}
	statusAt := job.Tracker.Newest()
	if statusAt.IsZero() {
		return fmt.Sprintf("waiting for station status on %s.status.%s (`dcgpd gbfs --url …/gbfs.json --feed %s` publishes it)",
			d.cfg.NATS.Prefix, rc.StatusFeed(), rc.StatusFeed())
	}
	return fmt.Sprintf("status received (newest %s UTC); waiting for both models to close a bin: pickups on %s.obs.%s and returns on %s.obs.%s",
		clock(statusAt), d.cfg.NATS.Prefix, rc.Pickups, d.cfg.NATS.Prefix, rc.Returns)
}

// waiting fills v.Waiting when it shows no ranking yet.
func (d *Daemon) waiting(v *RiskView, rr *rebalanceRun) {
	if v.BinEnd != nil {
		return
	}
	if r := d.Runner(rr.cfg.Pickups); r != nil {
		c := r.Config()
		v.Waiting = d.waitingFor(&rr.cfg, rr.job, c.Origin, c.Bin.Duration)
	}
}

// binEnd is the end of the bin of the grid (origin, width) holding t.
func binEnd(t, origin time.Time, width time.Duration) time.Time {
	k := t.Sub(origin) / width
	return origin.Add((k + 1) * width)
}

// clock writes a time of day in UTC, to the second.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") }
