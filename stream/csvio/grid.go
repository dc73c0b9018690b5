package csvio

import (
	"fmt"
	"math"

	"github.com/dcgpd/dcgpd/cvi"
)

// Grid maps OBS rows onto the bins × products grid of cvi.Data.
type Grid struct {
	Data *cvi.Data
	// Cell[i] is the index n·NP + k of OBS row i.
	Cell []int
}

// Build arranges the rows of o on a grid over the products ps. Cells with
// no row are unobserved with unlimited supply; unknown products are an
// error naming the line. A grid over MaxGridCells is refused.
func Build(o *Obs, ps *Products) (*Grid, error) {
	np := len(ps.Names)
	var times []float64
	for _, r := range o.Rows {
		if len(times) == 0 || r.Time != times[len(times)-1] {
			times = append(times, r.Time)
		}
	}
	if np > 0 && len(times) > maxGridCells/np {
		return nil, fmt.Errorf("%s: %w: %d times × %d products is more than %d cells (csvio.MaxGridCells)", o.Name, ErrTooLarge, len(times), np, maxGridCells)
	}
	d := &cvi.Data{Times: times, NP: np, Obs: make([]cvi.Obs, len(times)*np)}
	for i := range d.Obs {
		d.Obs[i] = cvi.Obs{Y: math.NaN(), Supply: math.Inf(1)}
	}
	g := &Grid{Data: d, Cell: make([]int, len(o.Rows))}
	n := -1
	last := math.NaN()
	for i, r := range o.Rows {
		if r.Time != last {
			n++
			last = r.Time
		}
		k, ok := ps.Index(r.Product)
		if !ok {
			return nil, fmt.Errorf("%s:%d: unknown product %q (not in the products file)", o.Name, r.Line, r.Product)
		}
		c := n*np + k
		g.Cell[i] = c
		d.Obs[c] = cvi.Obs{Y: r.Demand, Supply: r.Supply, Censored: r.Censored}
	}
	return g, nil
}
