package stream

import (
	"context"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// BinHook is told of each bin a runner closes: the daemon's join of two
// flows with a station status feed (a [[rebalance]] entry). Both calls
// run on the runner's goroutine.
type BinHook interface {
	// Closing may censor the bin's observations (obs[i] is product
	// names[i]) before the online step; the window keeps them as
	// changed. It is called for each bin with observations, and for each
	// late observation the window keeps (names and obs of length 1).
	Closing(model string, names []string, obs []cvi.Obs, start, end time.Time)
	// Published hands over the bin's filtered message; it may wait
	// (back-pressure) until ctx ends.
	Published(ctx context.Context, model string, names []string, msg *wire.LatentMessage)
}

// SetBinHook makes the runner tell h of each bin it closes. Call it
// before Run only.
func (r *Runner) SetBinHook(h BinHook) { r.hook = h }
