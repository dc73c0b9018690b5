package gbfs

import (
	"fmt"
	"time"
)

// publishTime is the time a new snapshot stamped last_updated is
// published at: last_updated, or the poller's clock (to the second, after
// the previous snapshot's) when last_updated is more than MaxClockSkew
// ahead of it. A snapshot not after the previous one is refused.
func (p *Poller) publishTime(lastUpdated, now time.Time) (time.Time, error) {
	ahead := lastUpdated.Sub(now)
	if ahead <= p.cfg.MaxClockSkew {
		p.clockBack(now)
		if !lastUpdated.After(p.lastAt) {
			return time.Time{}, &FeedError{File: FeedStationStatus, Reason: ReasonStaleFeed,
				Err: fmt.Errorf("last_updated %s went back from %s", lastUpdated.Format(time.RFC3339), p.lastAt.Format(time.RFC3339))}
		}
		return lastUpdated, nil
	}
	at := now.Truncate(time.Second)
	if at.Unix() <= p.lastAt.Unix() {
		at = time.Unix(p.lastAt.Unix()+1, 0).UTC() // a new message id
	}
	p.met.skewed.WithLabelValues(p.cfg.Feed).Inc()
	if p.ahead.occur(now, p.cfg.WarnInterval) {
		p.log.Warn().Time("last_updated", lastUpdated).Time("clock", now).Dur("ahead", ahead.Round(time.Second)).
			Dur("max_clock_skew", p.cfg.MaxClockSkew).Int("snapshots", p.ahead.count).
			Msg("gbfs station_status last_updated is ahead of this clock: published stamped at this clock")
	}
	return at, nil
}

// clockBack logs the end of a run of snapshots stamped ahead.
func (p *Poller) clockBack(now time.Time) {
	if ended, n, since := p.ahead.end(); ended {
		p.log.Info().Int("snapshots", n).Dur("for", now.Sub(since).Round(time.Second)).
			Msg("gbfs station_status last_updated back within the clock skew")
	}
}
