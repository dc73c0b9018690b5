package page

import (
	"slices"
	"time"

	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// pageRing is one model's recent bins for the operator's page: at most
// Bins bins up to the newest estimate (the oldest dropped first), and
// the observations of bins not yet estimated, at most maxAhead bins after
// the newest estimate (the daemon refuses data further ahead).
type pageRing struct {
	products []string
	index    map[string]int
	width    time.Duration
	maxAhead int64
	bins     map[int64]*pageBin
	newest   int64 // start of the newest filtered bin, Unix seconds
	latest   *wire.LatentMessage
}

// pageBin is one bin, per product (in the model's product order).
type pageBin struct {
	start, end time.Time
	demand     []*float64
	supply     []*float64
	censored   []bool
	filtered   []wire.Estimate
	smoothed   []wire.Estimate
	revision   int
}

func newPageRing(products []string, width time.Duration, maxAhead int) *pageRing {
	idx := make(map[string]int, len(products))
	for i, p := range products {
		idx[p] = i
	}
	return &pageRing{products: products, index: idx, width: width, maxAhead: int64(maxAhead), bins: map[int64]*pageBin{}}
}

// bin returns the bin starting at t, creating it unless it is older than
// every kept bin or more than maxAhead bins after the newest estimate.
func (g *pageRing) bin(t time.Time) *pageBin {
	k := t.Unix()
	if b := g.bins[k]; b != nil {
		return b
	}
	if g.newest != 0 && g.width >= time.Second && k > g.newest+g.maxAhead*int64(g.width/time.Second) {
		return nil
	}
	if n, oldest := g.estimated(); n >= Bins && k < oldest || int64(len(g.bins)) >= Bins+g.maxAhead {
		return nil
	}
	n := len(g.products)
	b := &pageBin{start: t.UTC(), end: t.Add(g.width).UTC(), demand: make([]*float64, n), supply: make([]*float64, n), censored: make([]bool, n)}
	g.bins[k] = b
	g.evict()
	return b
}

// estimated returns how many bins start at or before the newest estimate,
// and the oldest bin's start.
func (g *pageRing) estimated() (n int, oldest int64) {
	first := true
	for k := range g.bins {
		if k <= g.newest {
			n++
		}
		if first || k < oldest {
			oldest, first = k, false
		}
	}
	return n, oldest
}

// evict drops the oldest bins while more than Bins are estimated.
func (g *pageRing) evict() {
	for {
		n, oldest := g.estimated()
		if n <= Bins {
			return
		}
		delete(g.bins, oldest)
	}
}

func (g *pageRing) addObs(start time.Time, obs []wire.Observation) {
	b := g.bin(start)
	if b == nil {
		return
	}
	for _, o := range obs {
		i, ok := g.index[o.Product]
		if !ok || o.Demand == nil {
			continue
		}
		d := *o.Demand
		b.demand[i], b.supply[i] = &d, o.Supply
		b.censored[i] = o.Supply != nil && d >= *o.Supply
		if o.Censored != nil {
			b.censored[i] = *o.Censored
		}
	}
}

func (g *pageRing) addLatent(m *wire.LatentMessage) {
	if len(m.Estimates) != len(g.products) {
		return // a bin whose numerics failed has no estimates
	}
	b := g.bin(m.BinStart)
	if b == nil {
		return
	}
	if m.Kind == "smoothed" {
		if m.Revision >= b.revision {
			b.smoothed, b.revision = m.Estimates, m.Revision
		}
		return
	}
	b.filtered = m.Estimates
	if k := m.BinStart.Unix(); k >= g.newest {
		g.newest, g.latest = k, m
		g.evict()
	}
}

// Model is the JSON the operator's page draws for one model
// (GET /api/models/{model}).
type Model struct {
	Model string `json:"model"`
	// RecordingSince is when the page started recording: bins before it
	// show only what the read view held then.
	RecordingSince time.Time      `json:"recording_since"`
	BinSeconds     float64        `json:"bin_seconds"`
	Status         *stream.Status `json:"status,omitempty"`
	Products       []Product      `json:"products"`
}

// Product is one product's recent bins (oldest first) and the newest
// filtered estimate's forecast fan.
type Product struct {
	Product  string  `json:"product"`
	Bins     []Point `json:"bins"`
	Forecast []Band  `json:"forecast"`
}

// Point is one bin of one product: the observed demand (absent when
// not observed), whether supply capped it, and the filtered and newest
// smoothed latent demand with their 90% bands.
type Point struct {
	BinStart time.Time `json:"bin_start"`
	BinEnd   time.Time `json:"bin_end"`
	Demand   *float64  `json:"demand,omitempty"`
	Supply   *float64  `json:"supply,omitempty"`
	Censored bool      `json:"censored"`
	Filtered *Band     `json:"filtered,omitempty"`
	Smoothed *Band     `json:"smoothed,omitempty"`
	Revision int       `json:"revision,omitempty"`
	// TurnedAway and Lost are the demand the product turned away in the
	// bin and the part of it lost (wire.Estimate), from the newest
	// estimate that carries them; absent where it was not full.
	TurnedAway *float64 `json:"turned_away,omitempty"`
	Lost       *float64 `json:"lost,omitempty"`
}

// Band is a latent mean with its 5% and 95% quantiles.
type Band struct {
	BinStart time.Time `json:"bin_start,omitzero"`
	Mean     float64   `json:"mean"`
	Q05      float64   `json:"q05"`
	Q95      float64   `json:"q95"`
}

func band(e wire.Estimate) *Band { return &Band{Mean: e.Mean, Q05: e.Q05, Q95: e.Q95} }

// export copies the ring into its JSON form.
func (g *pageRing) export(model string, since time.Time) *Model {
	keys := make([]int64, 0, len(g.bins))
	for k := range g.bins {
		if k <= g.newest { // bins not yet estimated are not drawn
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := &Model{Model: model, RecordingSince: since, BinSeconds: g.width.Seconds(), Products: make([]Product, len(g.products))}
	for i, name := range g.products {
		p := Product{Product: name, Bins: make([]Point, 0, len(keys)), Forecast: []Band{}}
		for _, k := range keys {
			p.Bins = append(p.Bins, g.bins[k].point(i))
		}
		if g.latest != nil {
			for _, f := range g.latest.Forecasts {
				if i >= len(f.Estimates) {
					break
				}
				fb := band(f.Estimates[i])
				fb.BinStart = f.BinStart
				p.Forecast = append(p.Forecast, *fb)
			}
		}
		out.Products[i] = p
	}
	return out
}

func (b *pageBin) point(i int) Point {
	pt := Point{BinStart: b.start, BinEnd: b.end, Demand: b.demand[i], Supply: b.supply[i], Censored: b.censored[i]}
	if b.filtered != nil {
		pt.Filtered = band(b.filtered[i])
		pt.Censored = pt.Censored || b.filtered[i].Censored
		if e := b.filtered[i]; !e.Observed && e.TurnedAway != nil {
			// Full with nobody served, though a demand (0) was sent: a
			// [[charging]] entry's status emptied the bin
			// (docs/ev-charging.md); drawn as the model took it.
			pt.Demand = nil
		}
	}
	if b.smoothed != nil {
		pt.Smoothed, pt.Revision = band(b.smoothed[i]), b.revision
	}
	for _, es := range [][]wire.Estimate{b.filtered, b.smoothed} {
		if es != nil && es[i].TurnedAway != nil {
			pt.TurnedAway, pt.Lost = es[i].TurnedAway, es[i].Lost
		}
	}
	return pt
}
