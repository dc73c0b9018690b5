package gbfs

import (
	"errors"
	"time"
)

// failed counts and logs a failed poll (a warning when a run of failures
// starts, then at most once per WarnInterval) and returns the wait before
// the next: the backoff, or the server's Retry-After if longer, both at
// most MaxBackoff.
func (p *Poller) failed(err error) time.Duration {
	p.failures++
	wait := p.backoff(p.failures)
	var fe *FeedError
	if errors.As(err, &fe) && fe.RetryAfter > wait {
		wait = min(fe.RetryAfter, p.cfg.MaxBackoff)
	}
	p.feedError(err, &p.failing, "gbfs feed unusable: retrying", wait)
	return wait
}

// recovered ends a run of failed polls, with one line saying so.
func (p *Poller) recovered() {
	p.failures = 0
	if ended, n, since := p.failing.end(); ended {
		p.log.Info().Int("failed_polls", n).Dur("for", p.now().Sub(since).Round(time.Second)).Msg("gbfs feed usable again")
	}
}

// feedError counts a file that could not be used and logs it: a warning
// when ep starts (or WarnInterval after its last warning), else at debug
// level; wait, when not 0, is the time until the next try.
func (p *Poller) feedError(err error, ep *episode, msg string, wait time.Duration) {
	fe := &FeedError{File: "?", Reason: ReasonFetch, Err: err}
	errors.As(err, &fe)
	p.met.errors.WithLabelValues(p.cfg.Feed, fe.File, fe.Reason).Inc()
	ev := p.log.Debug()
	if ep.occur(p.now(), p.cfg.WarnInterval) {
		ev = p.log.Warn()
	}
	ev = ev.Str("file", fe.File).Str("reason", fe.Reason).Int("failures", ep.count)
	if wait > 0 {
		ev = ev.Dur("retry_in", wait)
	}
	ev.Err(fe.Err).Msg(msg)
}

// refreshFailed reports a failed re-read of a file whose copy is kept.
func (p *Poller) refreshFailed(err error, file string) {
	ep := p.refreshes[file]
	if ep == nil {
		ep = &episode{}
		p.refreshes[file] = ep
	}
	p.feedError(err, ep, "gbfs file unreadable: the copy held is kept", 0)
}

// refreshed ends a run of failed re-reads of file.
func (p *Poller) refreshed(file string) {
	if ep := p.refreshes[file]; ep != nil {
		if ended, n, since := ep.end(); ended {
			p.log.Info().Str("file", file).Int("failures", n).Dur("for", p.now().Sub(since).Round(time.Second)).Msg("gbfs file readable again")
		}
	}
}
