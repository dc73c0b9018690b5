package experiment

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/app/synth"
)

// SalesDir is the supermarket-sales directory relative to the repository
// root (the shared tree beside it; never copied into the repository: its
// licence does not allow shipping it).
const SalesDir = "../shared/data-raw/supermarket_veg"

// Sales experiment settings. The items are the two series the authors'
// models use (their product 1 and product 3): 102900005116899 净藕(1)
// (lotus root) and 102900005116530 西峡香菇(1) (Xixia mushroom). The
// authors' code censors a third item, 102900011016701 (Wuhu green
// pepper), but never fits it. The window is the reference's 1071 days.
var (
	SalesItems    = []string{"102900005116899", "102900005116530"}
	SalesWindow   = [2]time.Time{time.Date(2020, 7, 25, 0, 0, 0, 0, time.UTC), time.Date(2023, 6, 30, 0, 0, 0, 0, time.UTC)}
	SalesTestFrac = []float64{0.1, 0.3, 0.5}
	// SalesModels are the sales table's models.
	SalesModels = []string{"Oracle", "NCGP", "CGP", "DCGP-f", "DCGP-l"}
)

const salesPrefix = "sales-"

// isSales reports whether ds is a supermarket-sales dataset.
func isSales(ds *synth.Dataset) bool { return strings.HasPrefix(ds.Name, salesPrefix) }

// Sales builds the sales datasets of every split of SalesTestFrac from
// dir with the censoring and split drawn with seed.
func Sales(dir string, seed uint64) ([]*synth.Dataset, error) {
	series, err := synth.ReadSales(dir, SalesItems, SalesWindow[0], SalesWindow[1])
	if err != nil {
		return nil, err
	}
	out := make([]*synth.Dataset, len(SalesTestFrac))
	for i, tf := range SalesTestFrac {
		if out[i], err = synth.Sales(series, synth.SalesConfig{Seed: seed, TestFrac: tf}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// salesModel is the authors' sales model: an independent Matérn-5/2 per
// product (variance 1, lengthscale 1 on days rescaled to [0, 1]), noise
// variance 1, the diffusion between the two products with ℓ = 1 and
// one step, no sink.
func salesModel(m *spec.Model) {
	m.PerProduct = true
	m.Temporal = []spec.Temporal{{Kernel: "matern52", Variance: 1, Lengthscale: 1}}
	m.NoiseVariance = 1
	m.Diffusion = spec.Diffusion{Lengthscale: 1, Steps: 1}
}

// Summary is the mean and sample standard deviation of a model's scores
// on one dataset split over seeds.
type Summary struct {
	Dataset, Model, Split string
	Seeds                 int
	NLPD, RMSE, R2        [2]float64 // mean, standard deviation
	// NLPDStep is NLPD on the paper's scale: summed over the products
	// of a time step (the mean over time steps), NLPD × products.
	NLPDStep [2]float64
}

// Summarise groups rows by dataset (with any "@seed" suffix removed),
// model and split, in first-seen order, and returns the mean and spread
// of each group. Rows with a NaN score (failed fits) are left out; Seeds
// counts the rows kept. products scales NLPDStep.
func Summarise(rows []Row, products int) []Summary {
	type acc struct {
		s       Summary
		n, r, q []float64
	}
	var order []string
	groups := map[string]*acc{}
	for _, r := range rows {
		if math.IsNaN(r.RMSE) {
			continue
		}
		ds, _, _ := strings.Cut(r.Dataset, "@")
		key := ds + "\x00" + r.Model + "\x00" + r.Split
		a := groups[key]
		if a == nil {
			a = &acc{s: Summary{Dataset: ds, Model: r.Model, Split: r.Split}}
			groups[key] = a
			order = append(order, key)
		}
		a.n, a.r, a.q = append(a.n, r.NLPD), append(a.r, r.RMSE), append(a.q, r.R2)
	}
	out := make([]Summary, 0, len(order))
	for _, k := range order {
		a := groups[k]
		a.s.Seeds = len(a.r)
		a.s.NLPD, a.s.RMSE, a.s.R2 = meanSD(a.n), meanSD(a.r), meanSD(a.q)
		a.s.NLPDStep = [2]float64{a.s.NLPD[0] * float64(products), a.s.NLPD[1] * float64(products)}
		out = append(out, a.s)
	}
	return out
}

// SortSummaries orders summaries by dataset, split (train first) and the
// position of the model in models.
func SortSummaries(s []Summary, models []string) {
	pos := func(m string) int {
		for i, x := range models {
			if x == m {
				return i
			}
		}
		return len(models)
	}
	sort.SliceStable(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.Dataset != b.Dataset {
			return a.Dataset > b.Dataset // sales-9010 before sales-7030
		}
		if a.Split != b.Split {
			return a.Split > b.Split // train before test
		}
		return pos(a.Model) < pos(b.Model)
	})
}

// meanSD returns the mean and the sample standard deviation (0 for one
// value).
func meanSD(v []float64) [2]float64 {
	if len(v) == 0 {
		return [2]float64{math.NaN(), math.NaN()}
	}
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	if len(v) == 1 {
		return [2]float64{m, 0}
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return [2]float64{m, math.Sqrt(ss / float64(len(v)-1))}
}

// SalesSeedName names ds as the run of seed ("sales-9010@124"), so rows
// of several seeds stay apart and Summarise can regroup them.
func SalesSeedName(ds *synth.Dataset, seed uint64) string {
	return fmt.Sprintf("%s@%d", ds.Name, seed)
}

// WriteSummaries writes summaries as an aligned table: mean ± sd over
// seeds of NLPD per observation, NLPD per time step (the paper's scale),
// RMSE and R².
func WriteSummaries(w io.Writer, s []Summary) {
	fmt.Fprintf(w, "%-10s %-7s %-5s %5s %15s %15s %15s %15s\n", "dataset", "model", "split", "seeds", "nlpd/obs", "nlpd/step", "rmse", "r2")
	pm := func(v [2]float64) string { return fmt.Sprintf("%.3f ± %.3f", v[0], v[1]) }
	for _, r := range s {
		fmt.Fprintf(w, "%-10s %-7s %-5s %5d %15s %15s %15s %15s\n", r.Dataset, r.Model, r.Split, r.Seeds, pm(r.NLPD), pm(r.NLPDStep), pm(r.RMSE), pm(r.R2))
	}
}
