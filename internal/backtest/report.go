package backtest

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// metric is one column of the text tables.
type metric struct {
	name string
	get  func(*Score) float64
}

var metrics = []metric{
	{"RMSE", (*Score).RMSE}, {"MAE", (*Score).MAE}, {"CRPS", (*Score).CRPS}, {"90% coverage", (*Score).Coverage},
}

// WriteTable writes the report as text: for each subset and metric a
// table of methods × horizons (the best value per horizon marked *), then
// the nowcast of censored cells.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d origins from %s; the same cells for every method\n", r.Origins, r.EvalStart.Format("2006-01-02T15:04Z07:00"))
	for _, sub := range []string{All, Censored} {
		for _, mt := range metrics {
			n := 0
			if x := r.Find(ModelName, sub, r.Horizons[0]); x != nil {
				n = x.Score.N
			}
			fmt.Fprintf(&b, "\n%s, %s cells (%d at h=%d)\n%-16s", mt.name, sub, n, r.Horizons[0], "method")
			for _, h := range r.Horizons {
				fmt.Fprintf(&b, " %9s", "h="+strconv.Itoa(h))
			}
			b.WriteByte('\n')
			for _, m := range r.Methods {
				fmt.Fprintf(&b, "%-16s", m)
				for _, h := range r.Horizons {
					x := r.Find(m, sub, h)
					v := math.NaN()
					if x != nil && x.Score.N > 0 {
						v = mt.get(&x.Score)
					}
					mark := " "
					if mt.name != "90% coverage" && r.best(sub, h, mt) == m {
						mark = "*"
					}
					fmt.Fprintf(&b, " %8s%s", fmtNum(v), mark)
				}
				b.WriteByte('\n')
			}
		}
	}
	nc := &r.Nowcast
	if nc.Latent.N > 0 {
		fmt.Fprintf(&b, "\nnowcast (h=0) of %d censored cells:\n%-16s %9s %9s %9s %9s\n", nc.Latent.N, "method", "bias", "RMSE", "CRPS", "90% cov.")
		for _, x := range r.nowcastRows() {
			fmt.Fprintf(&b, "%-16s %9s %9s %9s %9s\n", x.name, fmtNum(x.s.Bias()), fmtNum(x.s.RMSE()), fmtNum(x.s.CRPS()), fmtNum(x.s.Coverage()))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// best is the method with the lowest value of mt at h on sub.
func (r *Report) best(sub string, h int, mt metric) string {
	best, bv := "", math.Inf(1)
	for _, m := range r.Methods {
		if x := r.Find(m, sub, h); x != nil && x.Score.N > 0 {
			if v := mt.get(&x.Score); v < bv {
				best, bv = m, v
			}
		}
	}
	return best
}

func fmtNum(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// WriteCSV writes one row per method, subset and horizon:
// method,subset,horizon,n,rmse,mae,crps,bias,coverage (coverage empty for
// point forecasts); the nowcast rows have horizon 0 and methods
// "dcgpd" (the realised demand), "dcgpd-latent" (the latent mean) and
// "observed".
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 8, 64)
	}
	row := func(m, sub string, h int, s *Score) []string {
		return []string{m, sub, strconv.Itoa(h), strconv.Itoa(s.N), f(s.RMSE()), f(s.MAE()), f(s.CRPS()), f(s.Bias()), f(s.Coverage())}
	}
	if err := cw.Write([]string{"method", "subset", "horizon", "n", "rmse", "mae", "crps", "bias", "coverage"}); err != nil {
		return err
	}
	for i := range r.Rows {
		x := &r.Rows[i]
		if x.Score.N == 0 {
			continue
		}
		if err := cw.Write(row(x.Method, x.Subset, x.Horizon, &x.Score)); err != nil {
			return err
		}
	}
	for _, x := range r.nowcastRows() {
		if err := cw.Write(row(x.name, Censored, 0, x.s)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// nowcastRow is one method's nowcast of the censored cells.
type nowcastRow struct {
	name string
	s    *Score
}

// nowcastRows are the nowcast's scored rows: the realised demand (named
// ModelName, absent for a model without it), the latent mean and the
// observed value.
func (r *Report) nowcastRows() []nowcastRow {
	nc := &r.Nowcast
	var out []nowcastRow
	if nc.Model.N > 0 {
		out = append(out, nowcastRow{ModelName, &nc.Model})
	}
	if nc.Latent.N > 0 {
		out = append(out, nowcastRow{LatentName, &nc.Latent}, nowcastRow{"observed", &nc.Observed})
	}
	return out
}
