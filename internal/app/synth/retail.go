package synth

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Retail example (examples/retail): a simulated catalogue of substitutable
// vegetables sold daily, with the structure of the supermarket sales (the
// real sales may not be redistributed, see ../shared/data-raw/PROVENANCE.md).
const (
	RetailSeed       = 1
	retailDays       = 112 // 16 weeks
	retailStockIn    = 0.03
	retailStockOut   = 0.20
	retailDiffLength = 1.0
	retailSink       = 0.3
	retailMissing    = 0.1
)

// retailStart is the first day, a Monday.
var retailStart = time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC)

// retailItem is one simulated item: mean daily kg and its position on the
// similarity plane (close items substitute for each other).
type retailItem struct {
	name  string
	base  float64
	x, y  float64
	phase float64
}

var retailItems = []retailItem{
	{"lettuce", 30, 0, 0, 0},
	{"rucola", 12, 0.5, 0, 1},
	{"spinach", 18, 0.25, 0.4, 2},
	{"shiitake", 10, 3, 0, 3},
	{"oyster-mushroom", 8, 3.5, 0, 4},
}

// Retail is the simulated catalogue: the true daily demand, what was sold,
// the supply during stock-outs and which cells hold no count.
type Retail struct {
	Items    []string
	Features [][]float64
	Days     []time.Time
	// TrueY, Obs and Supply are day × item kg (Supply +Inf in stock).
	TrueY, Obs, Supply [][]float64
	// Saturated marks a sold-out shelf (what arrived exceeded the supply).
	Saturated [][]bool
	// Missing marks cells written without a count, to be estimated.
	Missing [][]bool
}

// RetailExample simulates the retail example: five vegetables over 16
// weeks; demand = base·(1 + 0.25 at weekends)·(1 + 0.15 sin(2πd/60 + φ))
// plus N(0, (0.1·base)²), floored at 0 and rounded to the gram; stock-outs by
// SalesStockouts with 3% daily entry and 20% exit (mean five days, supply
// U(0, f/2) held); the excess of a sold-out item moved with
// exp(−d²/2ℓ²), ℓ = 1 on the similarity plane, 30% of it lost, receivers
// capped at their own supply; a tenth of the cells left without a count.
func RetailExample(seed uint64) (*Retail, error) {
	n, np := retailDays, len(retailItems)
	r := &Retail{TrueY: newMatrix(n, np), Obs: newMatrix(n, np), Supply: newMatrix(n, np),
		Saturated: newBoolMatrix(n, np), Missing: newBoolMatrix(n, np)}
	for _, it := range retailItems {
		r.Items = append(r.Items, it.name)
		r.Features = append(r.Features, []float64{it.x, it.y})
	}
	for d := range n {
		r.Days = append(r.Days, retailStart.AddDate(0, 0, d))
	}
	noise := newRNG(seed, streamDemand)
	for d, day := range r.Days {
		week := 1.0
		if wd := day.Weekday(); wd == time.Saturday || wd == time.Sunday {
			week = 1.25
		}
		for k, it := range retailItems {
			f := it.base * week * (1 + 0.15*math.Sin(2*math.Pi*float64(d)/60+it.phase))
			r.TrueY[d][k] = math.Round(1000*math.Max(0, f+0.1*it.base*noise.NormFloat64())) / 1000
		}
	}
	sup := newRNG(seed, streamSupply)
	col := make([]float64, n)
	for k := range np {
		for d := range n {
			col[d] = r.TrueY[d][k]
		}
		s, _ := SalesStockouts(sup, col, retailStockIn, retailStockOut)
		for d := range n {
			r.Supply[d][k] = math.Round(1000*s[d]) / 1000 // +Inf stays
		}
	}
	t, err := transitionMatrix(r.Features, retailDiffLength, retailSink)
	if err != nil {
		return nil, err
	}
	miss := newRNG(seed, streamSplit)
	for d := range n {
		censorTransfer(r.TrueY[d], r.Supply[d], t, true, r.Obs[d], r.Saturated[d])
		for k := range np {
			r.Obs[d][k] = math.Round(1000*r.Obs[d][k]) / 1000
			r.Missing[d][k] = miss.Float64() < retailMissing
		}
	}
	return r, nil
}

// WriteCSV writes the example's obs.csv (time,product,demand,supply,
// censored: an empty supply is unlimited, an empty demand a cell to
// estimate), products.csv (product,x,y) and truth.csv
// (time,product,true_demand).
func (r *Retail) WriteCSV(obs, products, truth io.Writer) error {
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	var werr error
	write := func(w *csv.Writer, rec ...string) {
		if werr == nil {
			werr = w.Write(rec)
		}
	}
	ow, pw, tw := csv.NewWriter(obs), csv.NewWriter(products), csv.NewWriter(truth)
	write(pw, "product", "x", "y")
	for k, name := range r.Items {
		write(pw, name, g(r.Features[k][0]), g(r.Features[k][1]))
	}
	write(ow, "time", "product", "demand", "supply", "censored")
	write(tw, "time", "product", "true_demand")
	for d, day := range r.Days {
		ts := day.Format(time.RFC3339)
		for k, name := range r.Items {
			demand, supply, cens := g(r.Obs[d][k]), "", "0"
			if !math.IsInf(r.Supply[d][k], 1) {
				supply = g(r.Supply[d][k])
			}
			if r.Saturated[d][k] {
				cens = "1"
			}
			if r.Missing[d][k] {
				demand, cens = "", "0"
			}
			write(ow, ts, name, demand, supply, cens)
			write(tw, ts, name, g(r.TrueY[d][k]))
		}
	}
	for _, w := range []*csv.Writer{ow, pw, tw} {
		w.Flush()
		if werr == nil {
			werr = w.Error()
		}
	}
	if werr != nil {
		return fmt.Errorf("synth: writing the retail example: %w", werr)
	}
	return nil
}
