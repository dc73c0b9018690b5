package gbfs

import "time"

// publishFailed counts and logs a status the daemon did not store: a
// warning when a run of such polls starts, then at most once per
// WarnInterval. The snapshot stays pending.
func (p *Poller) publishFailed(pe *PublishError) {
	p.met.publishErrors.WithLabelValues(p.cfg.Feed, pe.Reason).Inc()
	ev := p.log.Debug()
	if p.unstored.occur(p.now(), p.cfg.WarnInterval) {
		ev = p.log.Warn()
	}
	ev.Str("reason", pe.Reason).Int("failures", p.unstored.count).Int("superseded", p.lost).
		Err(pe).Msg("gbfs status not stored by the daemon: the snapshot stays pending")
}

// stored ends a run of polls whose status was not stored.
func (p *Poller) stored() {
	if ended, n, since := p.unstored.end(); ended {
		p.log.Info().Int("failures", n).Int("superseded", p.lost).Dur("for", p.now().Sub(since).Round(time.Second)).
			Msg("gbfs status stored again")
	}
	p.lost = 0
}

// supersede counts the pending snapshot, if not fully stored, as replaced
// by a newer one (logged with the run of publish failures).
func (p *Poller) supersede() {
	if p.sent < len(p.pending) {
		p.met.superseded.WithLabelValues(p.cfg.Feed).Inc()
		p.lost++
		p.log.Debug().Time("last_updated", p.lastStamp).Int("unstored", len(p.pending)-p.sent).
			Msg("gbfs snapshot superseded before it was stored")
	}
}
