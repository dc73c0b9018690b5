package backtest

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/dcgpd/dcgpd/stream/csvio"
)

// ErrTruth wraps every problem with a truth file.
var ErrTruth = errors.New("truth")

// maxTruthBytes bounds a truth file (as csvio bounds an OBS file).
const maxTruthBytes = 1 << 30

// ReadTruth replaces g's truth with a truth CSV's: a header with columns
// time, product and true_demand (others ignored), one row per cell.
// Cells the file does not name stay unknown (not scored); times outside
// the grid and unknown products are skipped. Errors name the line.
func ReadTruth(r io.Reader, name string, g *Grid) error {
	cr := csv.NewReader(io.LimitReader(r, maxTruthBytes))
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%w: %s:1: reading header: %w", ErrTruth, name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, c := range []string{"time", "product", "true_demand"} {
		if _, ok := col[c]; !ok {
			return fmt.Errorf("%w: %s:1: no %q column (header %v)", ErrTruth, name, c, header)
		}
	}
	prod := map[string]int{}
	for k, p := range g.Products {
		prod[p] = k
	}
	truth := nanMatrix(g.Len(), len(g.Products))
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %s:%d: %w", ErrTruth, name, line, err)
		}
		k, ok := prod[rec[col["product"]]]
		if !ok {
			continue
		}
		h, _, err := csvio.ParseTime(rec[col["time"]])
		if err != nil {
			return fmt.Errorf("%w: %s:%d: %w", ErrTruth, name, line, err)
		}
		t, err := rowTime(h)
		if err != nil {
			return fmt.Errorf("%w: %s:%d: %w", ErrTruth, name, line, err)
		}
		v, err := strconv.ParseFloat(rec[col["true_demand"]], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("%w: %s:%d: true_demand %q is not a finite number >= 0", ErrTruth, name, line, rec[col["true_demand"]])
		}
		i, ok := g.Index(binOf(t, g.Start, g.Width))
		if !ok || t.Before(g.Start) {
			continue
		}
		if !math.IsNaN(truth[i][k]) {
			return fmt.Errorf("%w: %s:%d: a second row for %q in the bin starting %s", ErrTruth, name, line, g.Products[k], g.BinStart(i).Format(time.RFC3339))
		}
		truth[i][k] = v
	}
	g.Truth = truth
	return nil
}
