package page

import (
	"context"
	"time"

	"github.com/dcgpd/dcgpd/stream"
)

// Backfill attempts: each at most fillTimeout, up to fillAttempts with a
// pause doubling from fillPause between them.
const (
	fillTimeout  = 30 * time.Second
	fillAttempts = 4
	fillPause    = time.Second
)

// fill is one model's backfill: done closes when it ends, err says how
// (nil: the ring holds the recent past).
type fill struct {
	done chan struct{}
	err  error
}

// startFill starts the model's backfill unless one runs or has
// succeeded: it belongs to the page (its context, Options.Context), not
// to the request that first asked, so a request cut off (a closed tab, a
// client timeout) does not cancel it, every request waits for the same
// one, and one that failed is started again by the next request. p.mu
// must not be held.
func (p *pageRecorder) startFill(r *stream.Runner) *fill {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.fills[r.Name()]
	if f != nil {
		select {
		case <-f.done:
			if f.err == nil {
				return f
			}
		default:
			return f // running
		}
	}
	f = &fill{done: make(chan struct{})}
	p.fills[r.Name()] = f
	p.wg.Go(func() { p.runFill(f, r) })
	return f
}

// runFill backfills, trying again after a failure while the page's
// context lasts.
func (p *pageRecorder) runFill(f *fill, r *stream.Runner) {
	defer close(f.done)
	pause := fillPause
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(p.ctx, fillTimeout)
		f.err = p.backfill(ctx, r)
		cancel()
		if f.err == nil {
			return
		}
		if p.ctx.Err() != nil || attempt == fillAttempts {
			p.o.Log.Warn().Err(f.err).Str("model", r.Name()).Int("attempts", attempt).
				Msg("operator page: backfill failed; the charts lack the recent past until a later request retries it")
			return
		}
		p.o.Log.Debug().Err(f.err).Str("model", r.Name()).Int("attempt", attempt).Msg("operator page: backfill failed; trying again")
		select {
		case <-time.After(pause):
		case <-p.ctx.Done():
		}
		pause *= 2
	}
}

// awaitFill waits for f, at most while ctx (the request) lasts.
func awaitFill(ctx context.Context, f *fill) {
	select {
	case <-f.done:
	case <-ctx.Done():
	}
}
