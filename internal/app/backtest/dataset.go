package backtest

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dcgpd/dcgpd/internal/app/synth"
)

// WriteDataset writes a simulated-censoring data set as the files a user
// would backtest with: obs.csv (every hour observed: the splits' observed
// demand, censored where the demand reaching a product, its own and
// the moved, exceeded its supply, as the benchmarks fit it), truth.csv (the true demand) and products.csv (x,y features),
// times as RFC 3339 from start (the data set's times are hours since it).
// Product names are the data set's up to the first space (Citi Bike: the
// station ID), so they stay valid daemon product names.
func WriteDataset(dir string, ds *synth.Dataset, start time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := make([]string, len(ds.Products))
	for k, p := range ds.Products {
		names[k] = "p" + strings.Fields(p)[0]
	}
	var prods, obs, truth strings.Builder
	prods.WriteString("product,x,y\n")
	for k, n := range names {
		fmt.Fprintf(&prods, "%s,%g,%g\n", n, ds.Features[k][0], ds.Features[k][1])
	}
	obs.WriteString("time,product,demand,supply,censored\n")
	truth.WriteString("time,product,true_demand\n")
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	a, b := 0, 0
	for a < len(ds.Train.Times) || b < len(ds.Test.Times) {
		sp, i := &ds.Test, b
		if b >= len(ds.Test.Times) || (a < len(ds.Train.Times) && ds.Train.Times[a] < ds.Test.Times[b]) {
			sp, i = &ds.Train, a
			a++
		} else {
			b++
		}
		ts := start.Add(time.Duration(sp.Times[i] * float64(time.Hour))).UTC().Format(time.RFC3339)
		for k, n := range names {
			supply, cens := "", "0"
			if u := sp.Supply[i][k]; !math.IsInf(u, 1) {
				supply = num(u)
			}
			if sp.Saturated[i][k] {
				cens = "1"
			}
			fmt.Fprintf(&obs, "%s,%s,%s,%s,%s\n", ts, n, num(sp.Obs[i][k]), supply, cens)
			fmt.Fprintf(&truth, "%s,%s,%s\n", ts, n, num(sp.TrueY[i][k]))
		}
	}
	for name, s := range map[string]*strings.Builder{"products.csv": &prods, "obs.csv": &obs, "truth.csv": &truth} {
		if err := writeFile(filepath.Join(dir, name), s.String()); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path, s string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if _, err := w.WriteString(s); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
