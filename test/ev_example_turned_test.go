package test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/internal/app/charging"
)

// evExampleRate is examples/ev-5min's known arrival rate at one site in
// the 5-minute bin from start: the garage's 30 weekday arrivals a day
// (charging.ArrivalRate, Pacific daylight time, 0.6× at weekends), a
// third of them at each site (the 42 chargers are dealt round-robin).
func evExampleRate(start time.Time) float64 {
	var s float64
	for m := range 5 {
		local := start.Add(time.Duration(m)*time.Minute - 7*time.Hour)
		r := charging.ArrivalRate(float64(local.Hour())+float64(local.Minute())/60, 30) / 60 / 3
		if wd := local.Weekday(); wd == time.Saturday || wd == time.Sunday {
			r *= 0.6
		}
		s += r
	}
	return s
}

// evExampleClass sums one class of site-bins: the filtered latent mean,
// the known rate, the arrivals (all, and during the site's full
// moments: the rate's expected turned away is rate × full fraction),
// the drivers turned away and the model's estimate of them.
type evExampleClass struct {
	bins                                           int
	latent, rate, rateFull, arrivals, truth, model float64
}

// TestLongEV5minTurnedAway measures why examples/ev-5min's drivers
// turned away come out near twice the truth file's (issue 35: 90.9
// against 50 on the daemon's replay). The example streamed through the
// daemon's runner with its own model.toml (no learning, daily re-smooths
// of 576 bins as its dcgpd.toml), scored from day 1: the site-bins split
// by how full the site was, each class's filtered latent mean against
// the known arrival rate and the arrivals. It asserts the explanation
// (so that a change in it fails here): the model's total latent demand
// is within 5% of the arrivals; the excess of the estimate over the
// truth lies in the bins full throughout (at least 90% of it), where
// the latent mean is above the known rate by more than a third, while
// the bins with a charger free throughout get less than the rate. It
// also records an experiment (evFillingUnobserved), asserting nothing of
// it.
func TestLongEV5minTurnedAway(t *testing.T) {
	if os.Getenv("DCGPD_LONG") != "1" {
		t.Skip("long mode: DCGPD_LONG=1 runs it (CI does)")
	}
	tb, err := ev5minExample()
	if err != nil {
		t.Fatal(err)
	}
	const trainDays = 1
	from := trainDays * 288
	res := evBacktest(t, tb, trainDays, false)
	r := evTurnedAway(t, tb, res, from)
	unmet := evUnmet(t, tb, res, from)
	names := []string{"free", "full at most half, uncensored", "full over half, censored", "full throughout, unobserved"}
	cls := make([]evExampleClass, len(names))
	for b := from; b < len(tb.Cells); b++ {
		for k, c := range tb.Cells[b] {
			i := 0
			switch {
			case c.FullFraction >= 1 && c.Served == 0:
				i = 3
			case c.Censored:
				i = 2
			case c.FullFraction > 0:
				i = 1
			}
			x := &cls[i]
			x.bins++
			x.latent += res.Forecasts.Mean[0][b-res.Forecasts.From][k]
			rate := evExampleRate(tb.BinStart(b))
			x.rate += rate
			x.rateFull += rate * c.FullFraction
			x.arrivals += float64(c.Arrivals)
			x.truth += float64(c.TurnedAway)
			x.model += unmet[b-from][k].Mean
		}
	}
	var rec strings.Builder
	fmt.Fprintf(&rec, "# examples/ev-5min, its model.toml, scored from day %d (DCGPD_LONG=1 go test ./test/ -run TestLongEV5minTurnedAway)\n", trainDays)
	var all evExampleClass
	for i, x := range cls {
		fmt.Fprintf(&rec, "%-30s %5d site-bins: latent mean %6.1f, known rate %6.1f, arrivals %4.0f; turned away %3.0f, the rate's expectation %5.1f, model %5.1f\n",
			names[i], x.bins, x.latent, x.rate, x.arrivals, x.truth, x.rateFull, x.model)
		all.latent, all.arrivals, all.rate, all.rateFull = all.latent+x.latent, all.arrivals+x.arrivals, all.rate+x.rate, all.rateFull+x.rateFull
	}
	fmt.Fprintf(&rec, "all: latent mean %.1f, known rate %.1f, arrivals %.0f; turned away: the rate's expectation %.1f\n", all.latent, all.rate, all.arrivals, all.rateFull)
	fmt.Fprintf(&rec, "turned away per site-day over %s\n", r)
	rec.WriteString(evFillingUnobserved(t, tb, trainDays))
	t.Log(rec.String())
	recordFigures(t, rec.String())
	full, free := cls[3], cls[0]
	excess, excessFull := r.est-r.truth, full.model-full.truth
	if d := math.Abs(all.latent/all.arrivals - 1); d > 0.05 {
		t.Errorf("total latent demand %.1f against %.0f arrivals: %.3f apart, the explanation assumes within 0.05", all.latent, all.arrivals, d)
	}
	if excessFull < 0.9*excess {
		t.Errorf("the bins full throughout hold %.1f of the excess %.1f, the explanation says at least 90%%", excessFull, excess)
	}
	if full.latent < 4.0/3*full.rate || free.latent > free.rate {
		t.Errorf("latent mean against the known rate: full throughout %.1f / %.1f (want above 4/3), free %.1f / %.1f (want below 1)", full.latent, full.rate, free.latent, free.rate)
	}
}

// evFillingUnobserved is an experiment on the cause: the same run with
// the bins in which a site was full for at most half of the bin (sent
// as counts, the ones picked out by the arrivals that filled the site)
// sent as no observation with unlimited supply instead. It returns the
// record's lines: the turned-away estimate, the latent mean in all and on
// the bins full throughout against the known rate.
func evFillingUnobserved(t *testing.T, tb *charging.Table, trainDays int) string {
	t.Helper()
	np := len(tb.Sites)
	res := evBacktestWith(t, tb, trainDays, false, func(lines []string) {
		for i := 1; i < len(lines); i++ {
			if c := tb.Cells[(i-1)/np][(i-1)%np]; c.FullFraction > 0 && !c.Censored {
				f := strings.SplitN(lines[i], ",", 3)
				lines[i] = f[0] + "," + f[1] + ",,,0"
			}
		}
	})
	from := trainDays * 288
	r := evTurnedAway(t, tb, res, from)
	var latent, rate, latentFull, rateFull float64
	for b := from; b < len(tb.Cells); b++ {
		for k, c := range tb.Cells[b] {
			m, x := res.Forecasts.Mean[0][b-res.Forecasts.From][k], evExampleRate(tb.BinStart(b))
			latent, rate = latent+m, rate+x
			if c.FullFraction >= 1 && c.Served == 0 {
				latentFull, rateFull = latentFull+m, rateFull+x
			}
		}
	}
	return fmt.Sprintf("experiment, bins full for at most half sent unobserved: latent mean %.1f against the rate's %.1f; full throughout %.1f against %.1f\nexperiment: turned away per site-day over %s\n",
		latent, rate, latentFull, rateFull, r)
}
