package backtest

import (
	"fmt"
	"io"
	"strings"
)

// GapClosed returns the share of the gap between the historical mean's
// unmet trips per station-day and hindsight's that dcgpd's s* closes,
// (hm − dcgpd)/(hm − hindsight); false when a policy is missing or the
// gap is not positive.
func (r *DecisionResult) GapClosed() (float64, bool) {
	d, hm, hs := r.Policy("dcgpd"), r.Policy("hm-c1p1t3"), r.Policy("hindsight")
	if d < 0 || hm < 0 || hs < 0 || r.StationDays == 0 {
		return 0, false
	}
	gap := r.PerStationDay(hm) - r.PerStationDay(hs)
	if !(gap > 0) {
		return 0, false
	}
	return (r.PerStationDay(hm) - r.PerStationDay(d)) / gap, true
}

// WriteDecisionTable writes r's unmet trips per station-day as one
// Markdown table row per policy (pickups + returns = total) and the
// share of the gap dcgpd's s* closes (GapClosed).
func (r *DecisionResult) WriteDecisionTable(w io.Writer, name string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d station-days; history censored pickups %.3f, returns %.3f of the cells\n\n", name, r.StationDays, r.HistoryCensored[0], r.HistoryCensored[1])
	b.WriteString("| policy | unmet pickups | unmet returns | unmet trips per station-day | mean stock / capacity |\n|---|---|---|---|---|\n")
	n := float64(r.StationDays)
	for p, pol := range r.Policies {
		level := "–"
		if p < len(r.MeanLevel) {
			level = formatFloat(r.MeanLevel[p], 3)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", pol, formatFloat(r.UnmetPickups[p]/n, 3), formatFloat(r.UnmetReturns[p]/n, 3), formatFloat(r.PerStationDay(p), 3), level)
	}
	if len(r.MeanLevel) > 0 {
		fmt.Fprintf(&b, "\nForecast minus true trips per station-day (the day's 24 bins): pickups dcgpd %s, hm-c1p1t3 %s; returns dcgpd %s, hm-c1p1t3 %s\n",
			formatFloat(r.DayBias[0][0], 2), formatFloat(r.DayBias[0][1], 2), formatFloat(r.DayBias[1][0], 2), formatFloat(r.DayBias[1][1], 2))
	}
	if g, ok := r.GapClosed(); ok {
		fmt.Fprintf(&b, "\ndcgpd's s* closes %.1f%% of the gap between hm-c1p1t3 and hindsight: (hm − dcgpd)/(hm − hindsight) = (%s − %s)/(%s − %s)\n",
			100*g, formatFloat(r.PerStationDay(r.Policy("hm-c1p1t3")), 3), formatFloat(r.PerStationDay(r.Policy("dcgpd")), 3),
			formatFloat(r.PerStationDay(r.Policy("hm-c1p1t3")), 3), formatFloat(r.PerStationDay(r.Policy("hindsight")), 3))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCalibration writes the Brier scores of P(empty within h) and
// P(full within h) per method and horizon, and the reliability table
// (predictions in tenths of [0, 1], all horizons pooled: count, mean
// predicted, observed frequency).
func (r *DecisionResult) WriteCalibration(w io.Writer) error {
	var b strings.Builder
	events := [2]string{"empty", "full"}
	b.WriteString("| Brier | event |")
	for _, h := range r.Horizons {
		fmt.Fprintf(&b, " h=%d |", h)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(r.Horizons)) + "\n")
	for m, name := range r.Methods {
		for e, ev := range events {
			fmt.Fprintf(&b, "| %s | %s |", name, ev)
			for hi := range r.Horizons {
				fmt.Fprintf(&b, " %s |", formatFloat(r.Brier[m][e][hi], 4))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nReliability (predicted probability in tenths; n, mean predicted → observed frequency):\n\n| method | event |")
	for i := range 10 {
		fmt.Fprintf(&b, " %.1f–%.1f |", float64(i)/10, float64(i+1)/10)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", 10) + "\n")
	for m, name := range r.Methods {
		for e, ev := range events {
			fmt.Fprintf(&b, "| %s | %s |", name, ev)
			for _, rb := range r.Reliab[m][e] {
				if rb.N == 0 {
					b.WriteString(" – |")
					continue
				}
				fmt.Fprintf(&b, " %d: %.2f→%.2f |", rb.N, rb.SumP/float64(rb.N), rb.Observed/float64(rb.N))
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
