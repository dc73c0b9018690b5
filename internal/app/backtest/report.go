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

// WriteTable writes the report as text: for all and censored cells and
// each metric a table of methods × horizons (the best value per horizon
// marked *), the 90% coverage on uncensored cells, the nowcasts, and with
// Periods the table by month (WriteMonths).
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d origins from %s; the same cells for every method\n", r.Origins, r.EvalStart.Format("2006-01-02T15:04Z07:00"))
	for _, sub := range []string{All, Censored, Uncensored} {
		for _, mt := range metrics {
			if sub == Uncensored && mt.name != "90% coverage" {
				continue
			}
			r.writeMetric(&b, sub, mt)
		}
	}
	for _, sub := range []string{Censored, Uncensored} {
		n := 0
		if x := r.Find(LatentName, sub, 0); x != nil {
			n = x.Score.N
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nnowcast (h=0) of %d %s cells:\n%-16s %9s %9s %9s %9s\n", n, sub, "method", "bias", "RMSE", "CRPS", "90% cov.")
		for _, m := range r.Nowcasters {
			if x := r.Find(m, sub, 0); x != nil {
				s := &x.Score
				fmt.Fprintf(&b, "%-16s %9s %9s %9s %9s\n", m, fmtNum(s.Bias()), fmtNum(s.RMSE()), fmtNum(s.CRPS()), fmtNum(s.Coverage()))
			}
		}
	}
	if len(r.Periods) > 0 {
		b.WriteByte('\n')
		r.writeMonths(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMetric writes one metric's table of methods × horizons on sub.
func (r *Report) writeMetric(b *strings.Builder, sub string, mt metric) {
	n := 0
	if x := r.Find(ModelName, sub, r.Horizons[0]); x != nil {
		n = x.Score.N
	}
	fmt.Fprintf(b, "\n%s, %s cells (%d at h=%d)\n%-16s", mt.name, sub, n, r.Horizons[0], "method")
	for _, h := range r.Horizons {
		fmt.Fprintf(b, " %9s", "h="+strconv.Itoa(h))
	}
	b.WriteByte('\n')
	for _, m := range r.Methods {
		fmt.Fprintf(b, "%-16s", m)
		for _, h := range r.Horizons {
			x := r.Find(m, sub, h)
			v := math.NaN()
			if x != nil && x.Score.N > 0 {
				v = mt.get(&x.Score)
			}
			mark := " "
			if mt.name != "90% coverage" && best(r.Rows, r.Methods, sub, h, mt.get) == m {
				mark = "*"
			}
			fmt.Fprintf(b, " %8s%s", fmtNum(v), mark)
		}
		b.WriteByte('\n')
	}
}

// best is the method of methods with the lowest value of get at h on sub.
func best(rows []Row, methods []string, sub string, h int, get func(*Score) float64) string {
	best, bv := "", math.Inf(1)
	for _, m := range methods {
		if x := findRow(rows, m, sub, h); x != nil && x.Score.N > 0 {
			if v := get(&x.Score); v < bv {
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

// csvHeader is the CSV's header; with Periods a month column leads.
var csvHeader = []string{"method", "subset", "horizon", "n", "rmse", "mae", "crps", "bias", "coverage"}

// WriteCSV writes one row per method, subset and horizon:
// method,subset,horizon,n,rmse,mae,crps,bias,coverage (coverage empty for
// point forecasts; rows with no cell left out); the nowcast rows have
// horizon 0 (methods "dcgpd": the realised demand, "dcgpd-latent",
// "observed", "em", "pd"). With Periods a first column, month, is "all"
// for the whole span, then each month's rows follow with month "2006-01".
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 8, 64)
	}
	months := len(r.Periods) > 0
	header := csvHeader
	if months {
		header = append([]string{"month"}, csvHeader...)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	write := func(period string, rows []Row) error {
		for i := range rows {
			x := &rows[i]
			if x.Score.N == 0 {
				continue
			}
			s := &x.Score
			rec := []string{x.Method, x.Subset, strconv.Itoa(x.Horizon), strconv.Itoa(s.N), f(s.RMSE()), f(s.MAE()), f(s.CRPS()), f(s.Bias()), f(s.Coverage())}
			if months {
				rec = append([]string{period}, rec...)
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		return nil
	}
	if err := write("all", r.Rows); err != nil {
		return err
	}
	for i := range r.Periods {
		if err := write(r.Periods[i].Name, r.Periods[i].Rows); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
