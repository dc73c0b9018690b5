package synth

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Supermarket-sales protocol (the paper's appendix "Supermarket sales").
const (
	// SalesFile is the item-level daily sales file inside the sales
	// directory (see ../shared/data-raw/PROVENANCE.md §2).
	SalesFile = "daily.csv"
	// SalesStockoutIn and SalesStockoutOut are the 2-state Markov chain's
	// daily probabilities of entering and of leaving a stock-out.
	SalesStockoutIn  = 0.02
	SalesStockoutOut = 0.05
	salesDateLayout  = "2006-01-02"
)

// ErrNoSalesData reports that the sales file is absent (it is never part
// of the repository).
var ErrNoSalesData = errors.New("synth: supermarket sales data not found")

// SalesSeries holds daily sales (kg) of some items over consecutive days.
type SalesSeries struct {
	// Items are the item codes in column order.
	Items []string
	// Start is the first day (UTC midnight); row i is Start + i days.
	Start time.Time
	// Quantity is day × item kg sold; 0 on a day with no row in the file.
	Quantity [][]float64
}

// ReadSales reads the daily sales of items over [start, end] (both
// included, whole days) from dir/daily.csv, summing duplicate rows of a
// day and item. A day without a row for an item counts as 0 kg, as the
// reference re-indexes with fill 0.
func ReadSales(dir string, items []string, start, end time.Time) (*SalesSeries, error) {
	if len(items) == 0 {
		return nil, errors.New("synth: sales query names no items")
	}
	if end.Before(start) || start.Truncate(24*time.Hour) != start || end.Truncate(24*time.Hour) != end {
		return nil, fmt.Errorf("synth: sales window %v … %v is not a range of whole days", start, end)
	}
	col := make(map[string]int, len(items))
	for k, it := range items {
		if _, dup := col[it]; dup {
			return nil, fmt.Errorf("synth: sales item %s queried twice", it)
		}
		col[it] = k
	}
	path := filepath.Join(dir, SalesFile)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v", ErrNoSalesData, err)
		}
		return nil, fmt.Errorf("synth: %w", err)
	}
	defer f.Close()
	n := int(end.Sub(start)/(24*time.Hour)) + 1
	s := &SalesSeries{Items: append([]string(nil), items...), Start: start, Quantity: newMatrix(n, len(items))}
	seen := make([]bool, len(items))
	if err := readSalesRows(f, path, start, n, col, s.Quantity, seen); err != nil {
		return nil, err
	}
	for k, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("synth: %s: item %s has no sales in %s … %s", path, items[k], start.Format(salesDateLayout), end.Format(salesDateLayout))
		}
	}
	return s, nil
}

// readSalesRows adds each row's quantity of a queried item inside the
// window to q and marks the item seen.
func readSalesRows(r io.Reader, path string, start time.Time, n int, col map[string]int, q [][]float64, seen []bool) error {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("synth: %s: header: %w", path, err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[strings.TrimSpace(h)] = i
	}
	for _, name := range []string{"date", "item", "quantity"} {
		if _, ok := idx[name]; !ok {
			return fmt.Errorf("synth: %s: no %q column", path, name)
		}
	}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("synth: %s: %w", path, err)
		}
		k, ok := col[rec[idx["item"]]]
		if !ok {
			continue
		}
		day, err := time.Parse(salesDateLayout, rec[idx["date"]])
		if err != nil {
			return fmt.Errorf("synth: %s line %d: date: %w", path, line, err)
		}
		i := int(day.Sub(start) / (24 * time.Hour))
		if day.Before(start) || i >= n {
			continue
		}
		v, err := strconv.ParseFloat(rec[idx["quantity"]], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("synth: %s line %d: quantity %q is not a finite number", path, line, rec[idx["quantity"]])
		}
		if q[i][k] += v; math.IsInf(q[i][k], 0) {
			return fmt.Errorf("synth: %s line %d: the day's total quantity overflows", path, line)
		}
		seen[k] = true
	}
}

// SalesStockouts simulates one product's supply under the sales protocol:
// a 2-state Markov chain started in stock, entering a stock-out with
// probability pIn and leaving it with pOut each day (one uniform draw per
// day). On entering, the supply is drawn U(0, f_t/2) from that day's true
// demand and held until the chain leaves; in stock it is +Inf. out marks
// the stock-out days.
func SalesStockouts(r *rand.Rand, f []float64, pIn, pOut float64) (supply []float64, out []bool) {
	supply, out = make([]float64, len(f)), make([]bool, len(f))
	held, inStockout := 0.0, false
	for t, ft := range f {
		u := r.Float64()
		switch {
		case !inStockout && u < pIn:
			inStockout = true
			held = uniform(r, 0, math.Max(ft, 0)/2)
		case inStockout && u < pOut:
			inStockout = false
		}
		out[t] = inStockout
		supply[t] = math.Inf(1)
		if inStockout {
			supply[t] = held
		}
	}
	return supply, out
}

// SalesConfig parameterises Sales.
type SalesConfig struct {
	// Seed drives the stock-out chains (stream streamSupply) and the split
	// (stream streamSplit).
	Seed uint64
	// TestFrac is the fraction of days held out at random, as the paper's
	// random permutation split (0.1, 0.3 or 0.5).
	TestFrac float64
}

// Sales builds the sales dataset from two items' daily sales taken as the
// true demand: stock-outs by SalesStockouts for each product in turn, the
// whole excess of a product out of stock moved to the other, lost where
// that one is out too (capped at its held supply), every series then
// standardised by the true series' mean and standard deviation (ddof 1),
// and a random split of the days. Times are the days rescaled to [0, 1].
func Sales(s *SalesSeries, cfg SalesConfig) (*Dataset, error) {
	if len(s.Items) != 2 {
		return nil, fmt.Errorf("synth: the sales protocol moves excess between two items, got %d", len(s.Items))
	}
	n := len(s.Quantity)
	if n < 4 {
		return nil, fmt.Errorf("synth: sales series of %d days is too short", n)
	}
	if !(cfg.TestFrac > 0 && cfg.TestFrac < 1) {
		return nil, fmt.Errorf("synth: sales test fraction %v is not in (0, 1)", cfg.TestFrac)
	}
	np := len(s.Items)
	grid := newSplit(linspace(0, 1, n), np)
	for i := range n {
		copy(grid.TrueY[i], s.Quantity[i])
	}
	r := newRNG(cfg.Seed, streamSupply)
	col := make([]float64, n)
	for k := range np {
		for i := range n {
			col[i] = grid.TrueY[i][k]
		}
		sup, _ := SalesStockouts(r, col, SalesStockoutIn, SalesStockoutOut)
		for i := range n {
			grid.Supply[i][k] = sup[i]
		}
	}
	t := swap2()
	censorGrid(&grid, t)
	if err := standardiseSales(&grid); err != nil {
		return nil, err
	}
	train, test := randomSplit(newRNG(cfg.Seed, streamSplit), n, cfg.TestFrac)
	d := &Dataset{
		Name:           fmt.Sprintf("sales-%02.0f%02.0f", 100*(1-cfg.TestFrac), 100*cfg.TestFrac),
		Products:       append([]string(nil), s.Items...),
		Features:       [][]float64{{-1, -1}, {1, 1}},
		Transfer:       t,
		DiffusionSteps: 1,
		Train:          grid.subset(train),
		Test:           grid.subset(test),
	}
	return d, d.Validate()
}

// standardiseSales z-scores each product's TrueY, Obs and Supply with the
// mean and sample standard deviation of its TrueY (an affine map, so the
// censoring and transfer relations are kept; +Inf stays +Inf).
func standardiseSales(g *Split) error {
	n := len(g.TrueY)
	for k := range g.TrueY[0] {
		mean := 0.0
		for i := range n {
			mean += g.TrueY[i][k]
		}
		mean /= float64(n)
		ss := 0.0
		for i := range n {
			ss += (g.TrueY[i][k] - mean) * (g.TrueY[i][k] - mean)
		}
		sd := math.Sqrt(ss / float64(n-1))
		if !(sd > 0) {
			return fmt.Errorf("synth: sales product %d has constant demand", k)
		}
		for i := range n {
			g.TrueY[i][k] = (g.TrueY[i][k] - mean) / sd
			g.Obs[i][k] = (g.Obs[i][k] - mean) / sd
			g.Supply[i][k] = (g.Supply[i][k] - mean) / sd
		}
	}
	return nil
}
