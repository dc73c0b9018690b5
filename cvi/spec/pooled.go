package spec

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/dcgpd/dcgpd/diffusion"
)

// PoolNeighbours is the number of nearest fitted products whose mean
// level a product without a row or a capacity takes (Pooling).
const PoolNeighbours = 3

// How a pooled product's level was set (Pooling).
const (
	// PoolByCapacity: the fitted products' level per unit of capacity
	// times the product's capacity.
	PoolByCapacity = "capacity"
	// PoolByNeighbours: the mean level of the PoolNeighbours nearest
	// fitted products (by the products' features).
	PoolByNeighbours = "neighbours"
	// PoolByMean: the mean level of every fitted row.
	PoolByMean = "mean"
)

// Pooling reports how a prior mean was set for the products a model
// serves: each product with a row of model.mean.values takes it; each
// without one takes the pooled profile, the fitted rows' shape (the mean
// over rows of each row divided by its own mean level, the mean over its
// cells) times a level set as By records.
type Pooling struct {
	// Fitted is the number of rows whose shape was pooled (rows with a
	// positive mean level), Rows the rows of model.mean.values.
	Fitted, Rows int
	// Own is the number of served products that have their own row;
	// Unused the rows of products the model does not serve.
	Own, Unused int
	// By maps each pooled product to how its level was set (PoolBy...).
	By map[string]string
}

// Pooled returns the number of products that got the pooled prior.
func (p Pooling) Pooled() int { return len(p.By) }

// Count returns the number of pooled products whose level was set how.
func (p Pooling) Count(how string) int {
	n := 0
	for _, h := range p.By {
		if h == how {
			n++
		}
	}
	return n
}

// String summarises the report in one sentence, for a log line.
func (p Pooling) String() string {
	return fmt.Sprintf("%d products without a row of model.mean.values got the pooled prior mean (the weekly shape of %d fitted rows; level by capacity %d, by the %d nearest fitted products %d, by the fitted mean %d); %d products have their own row, %d rows are of products not served",
		p.Pooled(), p.Fitted, p.Count(PoolByCapacity), PoolNeighbours, p.Count(PoolByNeighbours), p.Count(PoolByMean), p.Own, p.Unused)
}

// ErrNoPool is returned when products need the pooled prior mean and no
// row of model.mean.values has a positive mean level to pool.
var ErrNoPool = errors.New("model.mean.values: no fitted row to pool")

// PooledProfile returns the prior mean for the products of sum (in the
// order of sum.Names): a product with a row of m.Values takes it as
// NewProfile does; one without takes the pooled shape times a level
// (Pooling): its capacity times the fitted products' level per unit of
// capacity when sum.Capacity gives its and some served fitted product's;
// otherwise the mean level of the PoolNeighbours nearest served fitted
// products by sum.Features; otherwise the mean level of every fitted row.
// Rows of products not served are pooled but not served. When every
// product has a row the profile is NewProfile's.
func (m Mean) PooledProfile(sum Summary) (*Profile, Pooling, error) {
	n, err := cellsOf(m.period(), m.Step)
	if err != nil {
		return nil, Pooling{}, err
	}
	rep := Pooling{Rows: len(m.Values), By: map[string]string{}}
	p := &Profile{Step: m.Step, Cells: n, M: make([][]float64, len(sum.Names))}
	var missing []int
	for k, name := range sum.Names {
		vs, ok := m.Values[name]
		if !ok {
			missing = append(missing, k)
			continue
		}
		if len(vs) != n {
			return nil, Pooling{}, valuesError(name, fmt.Errorf("model.mean.values[%q] has %d values, want %d", name, len(vs), n))
		}
		p.M[k] = append([]float64(nil), vs...)
		rep.Own++
	}
	rep.Unused = len(m.Values) - rep.Own
	if len(missing) == 0 {
		return p, rep, nil
	}
	shape, fitted, mean, err := m.poolShape(n, sum.Names[missing[0]], len(missing))
	if err != nil {
		return nil, Pooling{}, err
	}
	rep.Fitted = fitted
	own := slices.Clone(p.M) // the served products' own rows only
	for _, k := range missing {
		level, how := poolLevel(sum, own, k, mean)
		row := make([]float64, n)
		for c := range row {
			row[c] = level * shape[c]
		}
		p.M[k] = row
		rep.By[sum.Names[k]] = how
	}
	return p, rep, nil
}

// poolShape returns the mean over the rows of m.Values with a positive
// mean level of each row divided by its mean level, the number of such
// rows and the mean of their levels. Rows are taken in name order, so the
// sums do not depend on map order. first and missing name the products
// without a row, for the error when there is nothing to pool.
func (m Mean) poolShape(n int, first string, missing int) (shape []float64, fitted int, mean float64, err error) {
	shape = make([]float64, n)
	for _, name := range sortedKeys(m.Values) {
		row := m.Values[name]
		if len(row) != n {
			return nil, 0, 0, valuesError(name, fmt.Errorf("model.mean.values[%q] has %d values, want %d", name, len(row), n))
		}
		l := rowLevel(row)
		if !(l > 0) {
			continue
		}
		for c, v := range row {
			shape[c] += v / l
		}
		mean += l
		fitted++
	}
	if fitted == 0 {
		return nil, 0, 0, valuesError("", fmt.Errorf("%w for product %q and %d more without a row: %d rows, none with a positive mean level (a model file from `dcgpd fit --save-model` with [model.mean] has one per fitted product)",
			ErrNoPool, first, missing-1, len(m.Values)))
	}
	for c := range shape {
		shape[c] /= float64(fitted)
	}
	return shape, fitted, mean / float64(fitted), nil
}

// rowLevel is a row's mean over its cells.
func rowLevel(row []float64) float64 {
	var s float64
	for _, v := range row {
		s += v
	}
	return s / float64(len(row))
}

// poolLevel returns the level of product k, which has no row, and how it
// was set; rows[j] is the own row of served product j (nil: none), mean the mean level of every fitted row.
func poolLevel(sum Summary, rows [][]float64, k int, mean float64) (float64, string) {
	own := func(j int) bool { return j != k && rows[j] != nil && rowLevel(rows[j]) > 0 }
	if len(sum.Capacity) == len(sum.Names) && sum.Capacity[k] > 0 {
		var sl, sc float64
		for j := range sum.Names {
			if own(j) && sum.Capacity[j] > 0 {
				sl += rowLevel(rows[j])
				sc += sum.Capacity[j]
			}
		}
		if sc > 0 {
			return sum.Capacity[k] * sl / sc, PoolByCapacity
		}
	}
	if len(sum.Features) == len(sum.Names) && len(sum.Features[k]) > 0 {
		metric := diffusion.Euclidean
		if sum.Geographic {
			metric = diffusion.GreatCircle
		}
		type cand struct {
			d float64
			j int
		}
		var cs []cand
		for j := range sum.Names {
			if own(j) && len(sum.Features[j]) == len(sum.Features[k]) {
				if d := metric.Distance(sum.Features[k], sum.Features[j]); !math.IsNaN(d) {
					cs = append(cs, cand{d, j})
				}
			}
		}
		if len(cs) > 0 {
			sort.Slice(cs, func(a, b int) bool { return cs[a].d < cs[b].d || cs[a].d == cs[b].d && cs[a].j < cs[b].j })
			cs = cs[:min(len(cs), PoolNeighbours)]
			var s float64
			for _, c := range cs {
				s += rowLevel(rows[c.j])
			}
			return s / float64(len(cs)), PoolByNeighbours
		}
	}
	return mean, PoolByMean
}
