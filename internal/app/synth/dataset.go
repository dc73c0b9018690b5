package synth

import (
	"fmt"
	"math"
)

// Dataset is one simulated (or real, censored-by-simulation) demand dataset.
type Dataset struct {
	// Name identifies the protocol, e.g. "A", "ST-2", "bike-4".
	Name string
	// Products names the N_p products or stations, in column order.
	Products []string
	// Features holds one row of product features per product: the paper's
	// X_diff positions for A/B/C, locations for ST, metres east/north of the
	// cluster centre for the bike data.
	Features [][]float64
	// Transfer is the N_p×N_p matrix that moved unmet demand when the data
	// were simulated: row i sends the fraction Transfer[i][j] of product i's
	// excess to j; 1 − Σ_j Transfer[i][j] is lost (the sink).
	Transfer [][]float64
	// Sink is the sink probability the transfer matrix was built with
	// (0 when no demand is lost by construction).
	Sink float64
	// DiffusionSteps is how many censor-and-transfer steps produced Obs.
	DiffusionSteps int
	// Train and Test are the two evaluation splits.
	Train, Test Split
}

// Split holds time × product matrices (row i at Times[i], column k for
// product k) over strictly increasing Times.
type Split struct {
	// Times are the time inputs, strictly increasing (raw x for A/B/C and
	// ST, hours since the window start for the bike data).
	Times []float64
	// Index maps each row to its position in the protocol's common grid
	// (ST: the 400-point t_grid; bike/cluster: the hourly window); nil when
	// the split was drawn on its own grid (A/B/C).
	Index []int
	// TrueF is the noiseless generating function, NaN where unknown.
	TrueF [][]float64
	// TrueY is the true demand: noisy, uncensored and undiffused.
	TrueY [][]float64
	// Obs is the observed demand after censoring and transfer, i.e. what a
	// model is trained on (for test rows: what would have been observed).
	Obs [][]float64
	// Supply is the threshold u (+Inf when unlimited).
	Supply [][]float64
	// Censored marks a stock-out for the product's own demand: TrueY > Supply.
	Censored [][]bool
	// Saturated marks that the demand reaching the product (own plus
	// transferred, at any diffusion step) exceeded its supply, so Obs is a
	// lower bound of the demand that arrived there. It contains Censored.
	Saturated [][]bool
}

// Len is the number of time points in the split.
func (s *Split) Len() int { return len(s.Times) }

// CensoredFraction returns, per product, the fraction of rows with
// Censored set (all zeros for an empty split).
func (s *Split) CensoredFraction() []float64 {
	if len(s.Censored) == 0 {
		return nil
	}
	out := make([]float64, len(s.Censored[0]))
	for _, row := range s.Censored {
		for k, c := range row {
			if c {
				out[k]++
			}
		}
	}
	for k := range out {
		out[k] /= float64(len(s.Censored))
	}
	return out
}

// Validate checks shapes and the invariants every generator guarantees.
func (d *Dataset) Validate() error {
	np := len(d.Products)
	if np == 0 {
		return fmt.Errorf("synth: dataset %q has no products", d.Name)
	}
	if len(d.Features) != np {
		return fmt.Errorf("synth: dataset %q: %d feature rows for %d products", d.Name, len(d.Features), np)
	}
	if err := checkMatrix("transfer", d.Transfer, np, np); err != nil {
		return fmt.Errorf("synth: dataset %q: %w", d.Name, err)
	}
	if err := d.Train.validate(np); err != nil {
		return fmt.Errorf("synth: dataset %q train split: %w", d.Name, err)
	}
	if err := d.Test.validate(np); err != nil {
		return fmt.Errorf("synth: dataset %q test split: %w", d.Name, err)
	}
	return nil
}

func (s *Split) validate(np int) error {
	n := len(s.Times)
	if n == 0 {
		return fmt.Errorf("no time points")
	}
	for i := 1; i < n; i++ {
		if !(s.Times[i] > s.Times[i-1]) {
			return fmt.Errorf("times not strictly increasing at row %d", i)
		}
	}
	if s.Index != nil && len(s.Index) != n {
		return fmt.Errorf("%d grid indices for %d rows", len(s.Index), n)
	}
	for _, m := range []struct {
		name string
		v    [][]float64
	}{{"TrueF", s.TrueF}, {"TrueY", s.TrueY}, {"Obs", s.Obs}, {"Supply", s.Supply}} {
		if err := checkMatrix(m.name, m.v, n, np); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		name string
		v    [][]bool
	}{{"Censored", s.Censored}, {"Saturated", s.Saturated}} {
		if len(m.v) != n {
			return fmt.Errorf("%s has %d rows, want %d", m.name, len(m.v), n)
		}
		for i, row := range m.v {
			if len(row) != np {
				return fmt.Errorf("%s row %d has %d columns, want %d", m.name, i, len(row), np)
			}
		}
	}
	for i := range s.Censored {
		for k := range s.Censored[i] {
			if s.Censored[i][k] && !s.Saturated[i][k] {
				return fmt.Errorf("row %d product %d censored but not saturated", i, k)
			}
		}
	}
	return nil
}

func checkMatrix(name string, m [][]float64, rows, cols int) error {
	if len(m) != rows {
		return fmt.Errorf("%s has %d rows, want %d", name, len(m), rows)
	}
	for i, row := range m {
		if len(row) != cols {
			return fmt.Errorf("%s row %d has %d columns, want %d", name, i, len(row), cols)
		}
	}
	return nil
}

// newMatrix allocates rows×cols zeros backed by one slice.
func newMatrix(rows, cols int) [][]float64 {
	back := make([]float64, rows*cols)
	m := make([][]float64, rows)
	for i := range m {
		m[i] = back[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return m
}

func newBoolMatrix(rows, cols int) [][]bool {
	back := make([]bool, rows*cols)
	m := make([][]bool, rows)
	for i := range m {
		m[i] = back[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return m
}

func filled(rows, cols int, v float64) [][]float64 {
	m := newMatrix(rows, cols)
	for _, row := range m {
		for k := range row {
			row[k] = v
		}
	}
	return m
}

// newSplit allocates a split over times with NaN TrueF.
func newSplit(times []float64, np int) Split {
	n := len(times)
	return Split{
		Times:     times,
		TrueF:     filled(n, np, math.NaN()),
		TrueY:     newMatrix(n, np),
		Obs:       newMatrix(n, np),
		Supply:    newMatrix(n, np),
		Censored:  newBoolMatrix(n, np),
		Saturated: newBoolMatrix(n, np),
	}
}

// subset copies the rows idx (into s's grid) of a grid split; the result's
// Index is idx composed with s.Index.
func (s *Split) subset(idx []int) Split {
	np := 0
	if len(s.TrueY) > 0 {
		np = len(s.TrueY[0])
	}
	times := make([]float64, len(idx))
	for r, i := range idx {
		times[r] = s.Times[i]
	}
	out := newSplit(times, np)
	out.Index = make([]int, len(idx))
	for r, i := range idx {
		out.Index[r] = i
		if s.Index != nil {
			out.Index[r] = s.Index[i]
		}
		copy(out.TrueF[r], s.TrueF[i])
		copy(out.TrueY[r], s.TrueY[i])
		copy(out.Obs[r], s.Obs[i])
		copy(out.Supply[r], s.Supply[i])
		copy(out.Censored[r], s.Censored[i])
		copy(out.Saturated[r], s.Saturated[i])
	}
	return out
}

// linspace mirrors numpy.linspace(a, b, n) (end point included).
func linspace(a, b float64, n int) []float64 {
	out := make([]float64, n)
	if n == 1 {
		out[0] = a
		return out
	}
	step := (b - a) / float64(n-1)
	for i := range out {
		out[i] = a + float64(i)*step
	}
	out[n-1] = b
	return out
}
