package backtest

import (
	"fmt"
	"math"
	"time"

	"github.com/dcgpd/dcgpd/stream/csvio"
)

// Grid is an observations CSV on the model's bin grid: bin i starts at
// Start + i·Width; cell (i, k) is product k in bin i.
type Grid struct {
	Start    time.Time
	Width    time.Duration
	Products []string
	// Y is the observed (possibly censored) demand, NaN where missing;
	// Supply is +Inf where unlimited; Censored marks stock-outs.
	Y, Supply [][]float64
	Censored  [][]bool
	// Truth is the true demand, NaN where unknown (no truth file: the
	// observed demand of uncensored cells).
	Truth [][]float64
}

// Len is the number of bins.
func (g *Grid) Len() int { return len(g.Y) }

// BinStart is the start of bin i.
func (g *Grid) BinStart(i int) time.Time { return g.Start.Add(time.Duration(i) * g.Width) }

// Index returns the bin holding t (false before the first or after the
// last bin).
func (g *Grid) Index(t time.Time) (int, bool) {
	d := t.Sub(g.Start)
	if d < 0 {
		return 0, false
	}
	i := int(d / g.Width)
	return i, i < g.Len()
}

// rowTime is a CSV row's time: timestamps as written, numbers as hours
// since the Unix epoch (the model time unit).
func rowTime(hours float64) (time.Time, error) {
	ns := hours * float64(time.Hour)
	if math.IsNaN(ns) || math.Abs(ns) > math.MaxInt64/2 {
		return time.Time{}, fmt.Errorf("time %v hours is out of range", hours)
	}
	return time.Unix(0, int64(math.Round(ns))).UTC(), nil
}

// binOf floors t to the grid of width from origin.
func binOf(t, origin time.Time, width time.Duration) time.Time {
	k := t.Sub(origin) / width
	if t.Before(origin.Add(k * width)) {
		k--
	}
	return origin.Add(k * width).UTC()
}

// NewGrid lays the rows of o (products in prods' order) on the bins of
// width from origin, from the first row's bin to the last's. A product
// with two rows in one bin, or a row for a product prods lacks, is an
// error naming the line.
func NewGrid(o *csvio.Obs, prods []string, origin time.Time, width time.Duration) (*Grid, error) {
	if width <= 0 {
		return nil, fmt.Errorf("bin width %v is not positive", width)
	}
	if len(o.Rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", o.Name)
	}
	idx := make(map[string]int, len(prods))
	for k, p := range prods {
		idx[p] = k
	}
	first, last := time.Time{}, time.Time{}
	for i, r := range o.Rows {
		t, err := rowTime(r.Time)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", o.Name, r.Line, err)
		}
		b := binOf(t, origin, width)
		if i == 0 || b.Before(first) {
			first = b
		}
		if i == 0 || b.After(last) {
			last = b
		}
	}
	n := int(last.Sub(first)/width) + 1
	const maxBins = 10_000_000
	if n > maxBins/max(1, len(prods)) {
		return nil, fmt.Errorf("%s: %d bins × %d products is too many cells", o.Name, n, len(prods))
	}
	g := &Grid{Start: first, Width: width, Products: prods,
		Y: nanMatrix(n, len(prods)), Supply: fillMatrix(n, len(prods), math.Inf(1)), Censored: boolMatrix(n, len(prods))}
	seen := boolMatrix(n, len(prods))
	for _, r := range o.Rows {
		k, ok := idx[r.Product]
		if !ok {
			return nil, fmt.Errorf("%s:%d: product %q is not in the products list", o.Name, r.Line, r.Product)
		}
		t, _ := rowTime(r.Time)
		i := int(binOf(t, origin, width).Sub(first) / width)
		if seen[i][k] {
			return nil, fmt.Errorf("%s:%d: product %q already has a row in the bin starting %s; aggregate rows to the bin width %v first",
				o.Name, r.Line, r.Product, g.BinStart(i).Format(time.RFC3339), width)
		}
		seen[i][k] = true
		g.Y[i][k], g.Supply[i][k], g.Censored[i][k] = r.Demand, r.Supply, r.Censored && !math.IsNaN(r.Demand)
	}
	g.Truth = nanMatrix(n, len(prods))
	for i := range g.Y {
		for k, y := range g.Y[i] {
			if !g.Censored[i][k] {
				g.Truth[i][k] = y
			}
		}
	}
	return g, nil
}

func nanMatrix(n, m int) [][]float64 { return fillMatrix(n, m, math.NaN()) }

func fillMatrix(n, m int, v float64) [][]float64 {
	flat := make([]float64, n*m)
	for i := range flat {
		flat[i] = v
	}
	out := make([][]float64, n)
	for i := range out {
		out[i] = flat[i*m : (i+1)*m : (i+1)*m]
	}
	return out
}

func boolMatrix(n, m int) [][]bool {
	flat := make([]bool, n*m)
	out := make([][]bool, n)
	for i := range out {
		out[i] = flat[i*m : (i+1)*m : (i+1)*m]
	}
	return out
}
