package synth

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSalesStockoutsProtocol runs the stock-out chain for 10⁶ seeded days
// and checks the appendix's protocol: the daily rates of entering and of
// leaving a stock-out match 2% and 5% within 4 binomial standard errors,
// the supply is drawn in [0, f/2) on the entry day, held unchanged while
// out of stock, and +Inf in stock.
func TestSalesStockoutsProtocol(t *testing.T) {
	const n = 1_000_000
	r := newRNG(7, streamDemand)
	f := make([]float64, n)
	for i := range f {
		f[i] = 20 * r.Float64() // kg, never negative
	}
	supply, out := SalesStockouts(newRNG(7, streamSupply), f, SalesStockoutIn, SalesStockoutOut)
	var inStock, entered, outDays, left int
	for i := 1; i < n; i++ {
		switch {
		case !out[i-1]:
			inStock++
			if out[i] {
				entered++
			}
		default:
			outDays++
			if !out[i] {
				left++
			}
		}
	}
	for _, c := range []struct {
		name    string
		hits, n int
		p       float64
	}{{"enter", entered, inStock, SalesStockoutIn}, {"leave", left, outDays, SalesStockoutOut}} {
		got := float64(c.hits) / float64(c.n)
		se := math.Sqrt(c.p * (1 - c.p) / float64(c.n))
		if math.Abs(got-c.p) > 4*se {
			t.Errorf("%s rate %.5f over %d days, want %.3f ± %.5f (4 s.e.)", c.name, got, c.n, c.p, 4*se)
		}
	}
	for i := range n {
		switch {
		case !out[i]:
			if !math.IsInf(supply[i], 1) {
				t.Fatalf("day %d in stock with supply %v, want +Inf", i, supply[i])
			}
		case i == 0 || !out[i-1]:
			if !(supply[i] >= 0 && supply[i] < f[i]/2) {
				t.Fatalf("day %d enters a stock-out with supply %v, want in [0, %v)", i, supply[i], f[i]/2)
			}
		case supply[i] != supply[i-1]:
			t.Fatalf("day %d: supply %v not held from %v", i, supply[i], supply[i-1])
		}
	}
	// The supply's position in (0, f/2) on entry is uniform: its mean
	// fraction of f/2 is 1/2 within 4 standard errors (sd 1/√12).
	var sum float64
	var k int
	for i := 1; i < n; i++ {
		if out[i] && !out[i-1] {
			sum += supply[i] / (f[i] / 2)
			k++
		}
	}
	if se := 1 / math.Sqrt(12*float64(k)); math.Abs(sum/float64(k)-0.5) > 4*se {
		t.Errorf("mean entry supply %.4f of f/2 over %d entries, want 0.5 ± %.4f", sum/float64(k), k, 4*se)
	}
}

// TestSalesTransfer checks the excess rule on hand-made days: a product
// out of stock keeps its supply and sends its whole excess to the other,
// which receives it if in stock and is capped at its own supply (the rest
// lost) if out too.
func TestSalesTransfer(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name      string
		y, u      []float64
		want      []float64
		censored  []bool
		saturated []bool
	}{
		{"both in stock", []float64{5, 3}, []float64{inf, inf}, []float64{5, 3}, []bool{false, false}, []bool{false, false}},
		{"first out", []float64{5, 3}, []float64{2, inf}, []float64{2, 6}, []bool{true, false}, []bool{true, false}},
		{"second out", []float64{5, 3}, []float64{inf, 1}, []float64{7, 1}, []bool{false, true}, []bool{false, true}},
		{"out, demand below supply", []float64{1, 3}, []float64{2, inf}, []float64{1, 3}, []bool{false, false}, []bool{false, false}},
		{"both out: excess lost", []float64{5, 3}, []float64{2, 4}, []float64{2, 4}, []bool{true, false}, []bool{true, true}},
		{"both out and short", []float64{5, 3}, []float64{2, 1}, []float64{2, 1}, []bool{true, true}, []bool{true, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newSplit([]float64{0}, 2)
			copy(g.TrueY[0], c.y)
			copy(g.Supply[0], c.u)
			censorGrid(&g, swap2())
			for k := range 2 {
				if g.Obs[0][k] != c.want[k] || g.Censored[0][k] != c.censored[k] || g.Saturated[0][k] != c.saturated[k] {
					t.Errorf("product %d: obs %v censored %v saturated %v, want %v %v %v", k, g.Obs[0][k], g.Censored[0][k], g.Saturated[0][k], c.want[k], c.censored[k], c.saturated[k])
				}
			}
		})
	}
}

// TestSalesDataset builds the dataset from a synthetic series and checks
// the split sizes (the paper's 964/107 for 1071 days at 90/10), the
// standardisation of the true demand and that what a product loses is
// what the other receives, up to the receiver's cap.
func TestSalesDataset(t *testing.T) {
	const n = 1071
	r := newRNG(3, streamDemand)
	s := &SalesSeries{Items: []string{"a", "b"}, Start: time.Date(2020, 7, 25, 0, 0, 0, 0, time.UTC), Quantity: newMatrix(n, 2)}
	for i := range n {
		s.Quantity[i][0] = 10 + 5*math.Sin(float64(i)/30) + 2*r.Float64()
		s.Quantity[i][1] = 6 + 3*math.Cos(float64(i)/20) + 2*r.Float64()
	}
	d, err := Sales(s, SalesConfig{Seed: 5, TestFrac: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if d.Train.Len() != 964 || d.Test.Len() != 107 {
		t.Fatalf("split %d/%d, want 964/107", d.Train.Len(), d.Test.Len())
	}
	all := append(append([]int(nil), d.Train.Index...), d.Test.Index...)
	seen := make([]bool, n)
	for _, i := range all {
		if seen[i] {
			t.Fatalf("day %d in both splits", i)
		}
		seen[i] = true
	}
	for k := range 2 {
		var m, ss float64
		for _, sp := range []*Split{&d.Train, &d.Test} {
			for i := range sp.TrueY {
				m += sp.TrueY[i][k]
			}
		}
		m /= n
		for _, sp := range []*Split{&d.Train, &d.Test} {
			for i := range sp.TrueY {
				ss += (sp.TrueY[i][k] - m) * (sp.TrueY[i][k] - m)
			}
		}
		if math.Abs(m) > 1e-12 || math.Abs(ss/(n-1)-1) > 1e-12 {
			t.Errorf("product %d: standardised mean %v, variance %v", k, m, ss/(n-1))
		}
	}
	var cens int
	for i, row := range d.Train.Censored {
		for k, c := range row {
			if c {
				cens++
				if d.Train.Obs[i][k] != d.Train.Supply[i][k] {
					t.Fatalf("row %d product %d censored but obs %v ≠ supply %v", i, k, d.Train.Obs[i][k], d.Train.Supply[i][k])
				}
			}
		}
	}
	// The stationary stock-out share is 0.02/0.07 ≈ 29% of days, demand
	// above the held supply on most of them; 1071 days hold only about 15
	// stock-outs, so the share of one run varies (0.20–0.53 over seeds
	// 1–20): this checks the order of magnitude only, the rates are
	// checked by TestSalesStockoutsProtocol.
	if frac := float64(cens) / float64(2*d.Train.Len()); frac < 0.1 || frac > 0.6 {
		t.Errorf("censored fraction %.3f outside [0.1, 0.6]", frac)
	}
}

// TestReadSalesShared reads the shared sales file where it is present.
func TestReadSalesShared(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "data-raw", "supermarket_veg")
	if _, err := os.Stat(filepath.Join(dir, SalesFile)); err != nil {
		t.Skipf("SKIPPED: the supermarket sales are not here (%v); they live in ../shared, which a fresh clone does not have", err)
	}
	start, end := time.Date(2020, 7, 25, 0, 0, 0, 0, time.UTC), time.Date(2023, 6, 30, 0, 0, 0, 0, time.UTC)
	s, err := ReadSales(dir, []string{"102900005116899", "102900005116530"}, start, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Quantity) != 1071 {
		t.Fatalf("%d days, want 1071", len(s.Quantity))
	}
	for k := range 2 {
		var days int
		for _, row := range s.Quantity {
			if row[k] < 0 {
				t.Fatalf("negative sales %v", row[k])
			}
			if row[k] > 0 {
				days++
			}
		}
		if days < 500 {
			t.Errorf("item %s sold on %d of 1071 days", s.Items[k], days)
		}
	}
}

// TestReadSalesErrors: a missing file is ErrNoSalesData; a malformed row
// names its line.
func TestReadSalesErrors(t *testing.T) {
	day := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := ReadSales(t.TempDir(), []string{"1"}, day, day); !errors.Is(err, ErrNoSalesData) {
		t.Fatalf("missing file: %v", err)
	}
	dir := t.TempDir()
	body := "date,item,quantity\n2021-01-01,1,2.5\n2021-01-01,1,abc\n"
	if err := os.WriteFile(filepath.Join(dir, SalesFile), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSales(dir, []string{"1"}, day, day); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("bad quantity: %v", err)
	}
	if _, err := ReadSales(dir, []string{"2"}, day, day); err == nil || !strings.Contains(err.Error(), "no sales") {
		t.Fatalf("absent item: %v", err)
	}
}

// FuzzReadSalesRows: any file body either decodes into finite quantities
// or returns an error; it never panics.
func FuzzReadSalesRows(f *testing.F) {
	f.Add("date,item,quantity\n2021-01-01,1,2.5\n2021-01-02,1,1\n")
	f.Add("date,item\n")
	f.Add("date,item,quantity\n2021-13-01,1,2\n")
	f.Add("quantity,item,date\n1e308,1,2021-01-01\n1e308,1,2021-01-01\n")
	f.Add("date,item,quantity\n2021-01-01,1\n")
	start := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body string) {
		q := newMatrix(3, 1)
		seen := make([]bool, 1)
		if err := readSalesRows(strings.NewReader(body), "fuzz", start, 3, map[string]int{"1": 0}, q, seen); err != nil {
			return
		}
		for _, row := range q {
			if math.IsNaN(row[0]) || math.IsInf(row[0], 0) {
				t.Fatalf("quantity %v from %q", row[0], body)
			}
		}
	})
}
