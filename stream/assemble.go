package stream

import (
	"math"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// Acker acknowledges an input message and, as the consumer acknowledges
// all (JetStream AckAll), every earlier one (jetstream.Msg satisfies it).
type Acker interface {
	Ack() error
}

// ClosedBin is a bin ready for inference: every product's observation
// (NaN demand: missing).
type ClosedBin struct {
	Index    int64
	Start    time.Time
	Obs      []cvi.Obs
	Observed int
	// Received is when the bin's last accepted message arrived (for the
	// ingest-to-publish latency).
	Received time.Time
}

// LateObs is an observation for a bin that had already closed, kept for
// the next re-smooth (late = "resmooth").
type LateObs struct {
	Index   int64
	Product int
	Obs     cvi.Obs
}

// AddResult reports what became of one message.
type AddResult struct {
	Accepted, Duplicates int
	Rejected             []*wire.Rejection
	Late                 []LateObs
}

// openBin collects one bin's observations.
type openBin struct {
	obs  []cvi.Obs
	have []bool
	n    int
	// minSeq is the lowest input sequence that filled it (0: none known).
	minSeq   uint64
	received time.Time
}

// Assembler turns a model's observation messages into closed bins, in bin
// order, by event time: a bin closes when every product has reported, or
// when the message clock (the latest bin start with data, or a watermark)
// reaches its end plus the allowed lateness. Bins between that got no message at
// all close empty. When a feed goes quiet nothing closes until newer data
// or a watermark message arrives: the clock is the data's, never the
// wall's, so a replay gives the same bins as the live feed.
type Assembler struct {
	names    map[string]int
	np       int
	width    time.Duration
	origin   time.Time
	lateness time.Duration
	maxAhead int64
	keepLate bool

	started bool
	next    int64 // index of the next bin to close
	clock   time.Time
	open    map[int64]*openBin
}

// NewAssembler returns an assembler for the products names with bins of
// width from origin.
func NewAssembler(names []string, cfg config.ModelConfig) *Assembler {
	a := &Assembler{names: map[string]int{}, np: len(names), width: cfg.Bin.Duration, origin: cfg.Origin,
		lateness: cfg.Lateness.Duration, maxAhead: int64(cfg.MaxAhead), keepLate: cfg.Late == "resmooth",
		open: map[int64]*openBin{}}
	for i, n := range names {
		a.names[n] = i
	}
	return a
}

// BinStart returns the start time of bin index i.
func (a *Assembler) BinStart(i int64) time.Time { return a.origin.Add(time.Duration(i) * a.width) }

// Open returns the number of open bins.
func (a *Assembler) Open() int { return len(a.open) }

// OldestOpenSeq returns the lowest input sequence held in an open bin, or
// 0 if no open bin holds a sequenced message: every message before it
// is in a closed bin or was refused.
func (a *Assembler) OldestOpenSeq() uint64 {
	var m uint64
	for _, b := range a.open {
		if b.minSeq != 0 && (m == 0 || b.minSeq < m) {
			m = b.minSeq
		}
	}
	return m
}

// Add files a decoded message with input sequence seq (0: unknown).
func (a *Assembler) Add(m *wire.ObsMessage, seq uint64, now time.Time) AddResult {
	var r AddResult
	if m.Watermark != nil {
		if m.Watermark.After(a.clock) {
			a.clock = *m.Watermark
		}
		return r
	}
	off := m.BinStart.Sub(a.origin)
	if off%a.width != 0 {
		r.Rejected = append(r.Rejected, wire.Reject(wire.ReasonTime, "bin_start %s is not on the %v grid from %s", m.BinStart.Format(time.RFC3339), a.width, a.origin.Format(time.RFC3339)))
		return r
	}
	idx := int64(off / a.width)
	if a.started && idx >= a.next+a.maxAhead {
		r.Rejected = append(r.Rejected, wire.Reject(wire.ReasonFarFuture, "bin_start %s is %d bins after the next bin to close (max_ahead %d)", m.BinStart.Format(time.RFC3339), idx-a.next, a.maxAhead))
		return r
	}
	if !a.started {
		a.started, a.next = true, idx
	}
	var b *openBin
	late := idx < a.next
	if !late {
		b = a.open[idx]
	}
	for _, o := range m.Observations {
		k, ok := a.names[o.Product]
		if !ok {
			r.Rejected = append(r.Rejected, wire.Reject(wire.ReasonProduct, "product %q is not in the model", o.Product))
			continue
		}
		obs := toObs(o)
		if late {
			if a.keepLate {
				r.Late = append(r.Late, LateObs{Index: idx, Product: k, Obs: obs})
				continue
			}
			r.Rejected = append(r.Rejected, wire.Reject(wire.ReasonLate, "bin %s closed already", m.BinStart.Format(time.RFC3339)))
			continue
		}
		if b == nil {
			b = &openBin{obs: make([]cvi.Obs, a.np), have: make([]bool, a.np)}
			for i := range b.obs {
				b.obs[i] = cvi.Obs{Y: math.NaN(), Supply: math.Inf(1)}
			}
			a.open[idx] = b
		}
		if b.have[k] {
			if sameObs(b.obs[k], obs) {
				r.Duplicates++
				continue
			}
			r.Rejected = append(r.Rejected, wire.Reject(wire.ReasonDuplicate, "product %q in bin %s already has a different observation", o.Product, m.BinStart.Format(time.RFC3339)))
			continue
		}
		b.obs[k], b.have[k] = obs, true
		b.n++
		r.Accepted++
	}
	// The clock is the newest bin start with data: data for a bin that
	// starts at or after b's end (plus lateness) closes b.
	if !late && m.BinStart.After(a.clock) && r.Accepted+r.Duplicates > 0 {
		a.clock = *m.BinStart
	}
	if b != nil && r.Accepted > 0 {
		if seq != 0 && (b.minSeq == 0 || seq < b.minSeq) {
			b.minSeq = seq
		}
		b.received = now
	}
	return r
}

// Ready pops the bins that can close, in order.
func (a *Assembler) Ready(dst []ClosedBin) []ClosedBin {
	if !a.started {
		return dst
	}
	for {
		b := a.open[a.next]
		complete := b != nil && b.n == a.np
		due := !a.clock.Before(a.BinStart(a.next + 1).Add(a.lateness))
		if !complete && !due {
			return dst
		}
		cb := ClosedBin{Index: a.next, Start: a.BinStart(a.next)}
		if b != nil {
			cb.Obs, cb.Observed, cb.Received = b.obs, b.n, b.received
			delete(a.open, a.next)
		} else {
			cb.Obs = make([]cvi.Obs, a.np)
			for i := range cb.Obs {
				cb.Obs[i] = cvi.Obs{Y: math.NaN(), Supply: math.Inf(1)}
			}
		}
		dst = append(dst, cb)
		a.next++
	}
}

func toObs(o wire.Observation) cvi.Obs {
	obs := cvi.Obs{Y: math.NaN(), Supply: math.Inf(1)}
	if o.Supply != nil {
		obs.Supply = *o.Supply
	}
	if o.Demand != nil {
		obs.Y = *o.Demand
		obs.Censored = obs.Y >= obs.Supply
		if o.Censored != nil {
			obs.Censored = *o.Censored
		}
	}
	return obs
}

func sameObs(a, b cvi.Obs) bool {
	same := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	return same(a.Y, b.Y) && same(a.Supply, b.Supply) && a.Censored == b.Censored
}
