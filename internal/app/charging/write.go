package charging

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"
)

// WriteObs writes the table as an observations CSV (time, product,
// demand, supply, censored) that `dcgpd fit`, `backtest` and `replay`
// read: the served starts as the demand, censored where the site was
// full. A full bin in which the site served nobody is written with no
// demand and supply 0 (see Cell.Observation).
func (t *Table) WriteObs(w io.Writer) error {
	return t.write(w, []string{"time", "product", "demand", "supply", "censored"}, func(c *Cell) []string {
		y, ok, censored := c.Observation()
		demand := ""
		if ok {
			demand = strconv.Itoa(y)
		}
		return []string{demand, strconv.Itoa(c.Supply), boolDigit(censored)}
	})
}

// Observation is what the cell tells the model: the served count y, ok =
// false where there is no observation, and whether it is censored. A
// full bin in which nobody was served says only that the demand was at
// least 0, which a count always is, but a Gaussian-noise Tobit term
// would read as evidence of demand (P(f + ε ≥ 0) grows with f): it is
// left unobserved, its supply 0 (everything the site's own drivers
// wanted went to its neighbours or was lost).
func (c *Cell) Observation() (y int, ok, censored bool) {
	if c.Censored && c.Served == 0 {
		return 0, false, false
	}
	return c.Served, true, c.Censored
}

// WriteTruth writes the truth CSV: true_demand (the site's own arrivals)
// and, per cell, the arrivals turned_away, the lost ones, and the part of
// the bin the site was full.
func (t *Table) WriteTruth(w io.Writer) error {
	return t.write(w, []string{"time", "product", "true_demand", "turned_away", "lost", "full_fraction"}, func(c *Cell) []string {
		return []string{strconv.Itoa(c.Arrivals), strconv.Itoa(c.TurnedAway), strconv.Itoa(c.Lost),
			strconv.FormatFloat(c.FullFraction, 'g', 4, 64)}
	})
}

// WriteProducts writes the sites as a products CSV (product, lat, lon).
func (t *Table) WriteProducts(w io.Writer) error {
	cw := csv.NewWriter(w)
	rows := [][]string{{"product", "lat", "lon"}}
	for _, s := range t.Sites {
		rows = append(rows, []string{s.Name, strconv.FormatFloat(s.Lat, 'f', 6, 64), strconv.FormatFloat(s.Lon, 'f', 6, 64)})
	}
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("writing products: %w", err)
	}
	return nil
}

func (t *Table) write(w io.Writer, header []string, cols func(*Cell) []string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("writing %s: %w", header[2], err)
	}
	rec := make([]string, 0, len(header))
	for b, row := range t.Cells {
		ts := t.BinStart(b).UTC().Format(time.RFC3339)
		for s := range row {
			rec = append(rec[:0], ts, t.Sites[s].Name)
			rec = append(rec, cols(&row[s])...)
			if err := cw.Write(rec); err != nil {
				return fmt.Errorf("writing bin %d: %w", b, err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	return nil
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
