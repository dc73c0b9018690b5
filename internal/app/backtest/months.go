package backtest

import (
	"fmt"
	"math"
	"strings"
)

// writeMonths writes the scores per calendar month: for each month and
// horizon the model's RMSE and CRPS with the best baseline's and their
// ratio, its 90% coverage on all, censored and uncensored cells; then each
// month's nowcast of censored cells (RMSE of every nowcaster) and the
// realised demand's 90% coverage on censored and uncensored cells.
func (r *Report) writeMonths(b *strings.Builder) {
	baselines := r.Methods[1:]
	fmt.Fprintf(b, "by calendar month of the forecast's bin: %s against the best baseline (ratio = %s / best), %s's 90%% coverage\n", ModelName, ModelName, ModelName)
	fmt.Fprintf(b, "%-8s %4s %6s %8s %8s %-15s %6s %8s %8s %-15s %6s %6s %6s %6s\n", "month", "h", "cells",
		"RMSE", "best", "(baseline)", "ratio", "CRPS", "best", "(baseline)", "ratio", "cov", "cens", "uncens")
	for i := range r.Periods {
		p := &r.Periods[i]
		for _, h := range r.Horizons {
			m := p.Find(ModelName, All, h)
			if m == nil || m.Score.N == 0 {
				continue
			}
			fmt.Fprintf(b, "%-8s %4d %6d", p.Name, h, m.Score.N)
			for _, get := range []func(*Score) float64{(*Score).RMSE, (*Score).CRPS} {
				bm := best(p.Rows, baselines, All, h, get)
				bv := math.NaN()
				if x := p.Find(bm, All, h); x != nil {
					bv = get(&x.Score)
				}
				fmt.Fprintf(b, " %8s %8s %-15s %6s", fmtNum(get(&m.Score)), fmtNum(bv), "("+bm+")", fmtNum(get(&m.Score)/bv))
			}
			fmt.Fprintf(b, " %6s %6s %6s\n", fmtNum(m.Score.Coverage()), covOf(p, ModelName, Censored, h), covOf(p, ModelName, Uncensored, h))
		}
	}
	fmt.Fprintf(b, "\nnowcast (h=0) by calendar month: RMSE on censored cells; %s = the realised demand, with its 90%% coverage on censored and uncensored cells\n%-8s %6s", ModelName, "month", "cells")
	for _, m := range r.Nowcasters {
		fmt.Fprintf(b, " %12s", m)
	}
	fmt.Fprintf(b, " %6s %6s\n", "cens", "uncens")
	for i := range r.Periods {
		p := &r.Periods[i]
		x := p.Find(LatentName, Censored, 0)
		if x == nil {
			continue
		}
		fmt.Fprintf(b, "%-8s %6d", p.Name, x.Score.N)
		for _, m := range r.Nowcasters {
			v := math.NaN()
			if y := p.Find(m, Censored, 0); y != nil {
				v = y.Score.RMSE()
			}
			fmt.Fprintf(b, " %12s", fmtNum(v))
		}
		fmt.Fprintf(b, " %6s %6s\n", covOf(p, ModelName, Censored, 0), covOf(p, ModelName, Uncensored, 0))
	}
}

// covOf is the formatted 90% coverage of a row of p ("-" if none).
func covOf(p *Period, method, subset string, h int) string {
	if x := p.Find(method, subset, h); x != nil && x.Score.N > 0 {
		return fmtNum(x.Score.Coverage())
	}
	return "-"
}
