package backtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/inventory"
	"github.com/dcgpd/dcgpd/stream/csvio"
)

// Stations is a bike-share cluster's hourly history: the true demand of
// both flows (realised trips, taken as the demand) and each station's
// docks.
type Stations struct {
	// Start is the first bin's start; bin i is Start + i hours.
	Start    time.Time
	Names    []string
	Capacity []int
	// Features are the stations' coordinates in metres (x, y).
	Features [][]float64
	// Pickups and Returns are bin × station counts.
	Pickups, Returns [][]float64
}

// DecisionOptions configure a decision backtest.
type DecisionOptions struct {
	// Spec is the model of each flow: a pickups model and a returns model
	// are learned from it separately on the bins before EvalFrom.
	Spec spec.Spec
	Data *Stations
	// World is the history's protocol (restocking and riders moving on),
	// which censors what the models and baselines see.
	World WorldConfig
	// EvalFrom and End bound the operating days scored: each day starts
	// at DayStart hours past midnight and lasts 24 bins; the stocking
	// decision is made from the forecasts published when the bin before
	// it closes.
	EvalFrom, End time.Time
	DayStart      int
	// Planner configures the inventory chain; its PlanningBins is the
	// operating day (24).
	Planner inventory.Config
	// Horizons are the calibration horizons (bins into the day).
	Horizons []int
	// Weeks is K of the bin-of-week mean (default 4).
	Weeks int
	// Resmooth is the daemon's re-smoothing schedule (its defaults when
	// nil).
	Resmooth *config.ResmoothConfig
	// Progress, if not nil, receives one line per stage.
	Progress func(string)
	// policies replace the default policies (experiments).
	policies []decisionPolicy
}

// decisionDay is the operating day's length in bins.
const decisionDay = 24

// DecisionResult is a decision backtest's outcome.
type DecisionResult struct {
	Policies []string
	// StationDays is the number of (station, day) pairs scored.
	StationDays int
	// UnmetPickups[p] and UnmetReturns[p] are policy p's unmet trips
	// summed over the station-days.
	UnmetPickups, UnmetReturns []float64
	// MeanLevel[p] is policy p's mean stock at the day's start as a
	// fraction of the capacity.
	MeanLevel []float64
	// DayBias[flow][method] is the mean over the station-days of the
	// day's forecast rates minus the day's true counts (flow 0 pickups,
	// 1 returns; method 0 dcgpd's mean plugged in, 1 HM(C1,P1,T3)).
	DayBias [2][2]float64
	// Calibration per method (the policies but hindsight, in order),
	// event (0 empty, 1 full) and horizon: Brier scores and a
	// reliability table.
	Methods  []string
	Horizons []int
	Brier    [][2][]float64 // [method][event][horizon]
	Reliab   [][2][10]reliabilityBin
	// Flow reports are the two models' forecast scores on the same span.
	PickupsReport, ReturnsReport *Report
	// HistoryCensored is the fraction of cells censored in the history,
	// pickups and returns.
	HistoryCensored [2]float64
	Learn, Stream   time.Duration
}

// reliabilityBin accumulates predictions in one tenth of [0, 1].
type reliabilityBin struct {
	N              int
	SumP, Observed float64
}

// PerStationDay returns policy p's unmet pickups plus returns per
// station-day.
func (r *DecisionResult) PerStationDay(p int) float64 {
	return (r.UnmetPickups[p] + r.UnmetReturns[p]) / float64(r.StationDays)
}

// Policy returns the index of the named policy (−1 if absent).
func (r *DecisionResult) Policy(name string) int {
	for i, p := range r.Policies {
		if p == name {
			return i
		}
	}
	return -1
}

// RunDecision learns a pickups model and a returns model on the history
// before EvalFrom, streams both flows through the daemon's runner, and on
// every operating day from EvalFrom to End stocks each station at s*
// from dcgpd's two forecasts (uncertainty integrated, and plugged in),
// from the baselines' rates and in hindsight, replays the day's true
// pickups and returns from each level, and counts the unmet trips.
func (o DecisionOptions) RunDecision(ctx context.Context) (*DecisionResult, error) {
	d := o.Data
	if d == nil || len(d.Pickups) == 0 || len(d.Names) == 0 {
		return nil, errors.New("decision backtest: no data")
	}
	if len(d.Returns) != len(d.Pickups) || len(d.Capacity) != len(d.Names) || len(d.Features) != len(d.Names) {
		return nil, errors.New("decision backtest: pickups, returns, capacities and features do not match")
	}
	if o.DayStart < 0 || o.DayStart > 23 {
		return nil, fmt.Errorf("decision backtest: day start %d is not an hour of the day", o.DayStart)
	}
	if o.World.Transfer != nil && len(o.World.Transfer) != len(d.Names) {
		return nil, errors.New("decision backtest: the transfer matrix does not match the stations")
	}
	o.Planner.PlanningBins = decisionDay
	pl, err := inventory.NewPlanner(o.Planner)
	if err != nil {
		return nil, err
	}
	indep := o.Planner
	indep.Shared = 0
	pi, err := inventory.NewPlanner(indep)
	if err != nil {
		return nil, err
	}
	hist := SimulateHistory(o.World, d.Start.Hour(), d.Pickups, d.Returns, d.Capacity)
	o.policies = o.policyList()
	res := &DecisionResult{Horizons: o.Horizons}
	for _, p := range o.policies {
		res.Methods = append(res.Methods, p.name)
	}
	res.Policies = append(append([]string(nil), res.Methods...), "hindsight")
	res.HistoryCensored = [2]float64{fraction(hist.PickupsCensored), fraction(hist.ReturnsCensored)}
	if o.Progress != nil {
		o.Progress(fmt.Sprintf("history: %d bins × %d stations, censored pickups %.3f, returns %.3f of the cells",
			len(d.Pickups), len(d.Names), res.HistoryCensored[0], res.HistoryCensored[1]))
	}
	flows, err := o.streamFlows(ctx, hist)
	if err != nil {
		return nil, err
	}
	res.PickupsReport, res.ReturnsReport = flows[0].Report, flows[1].Report
	res.Learn, res.Stream = flows[0].Learn+flows[1].Learn, flows[0].Stream+flows[1].Stream
	if err := o.decide([2]*inventory.Planner{pl, pi}, hist, flows, res); err != nil {
		return nil, err
	}
	return res, nil
}

// streamFlows runs the backtest of each flow (learn, stream, score), the
// two side by side.
func (o DecisionOptions) streamFlows(ctx context.Context, hist *History) ([2]*Result, error) {
	d := o.Data
	var prods strings.Builder
	prods.WriteString("product,x,y\n")
	for k, n := range d.Names {
		fmt.Fprintf(&prods, "%s,%g,%g\n", n, d.Features[k][0], d.Features[k][1])
	}
	products, err := csvio.ReadProducts(strings.NewReader(prods.String()), "stations")
	if err != nil {
		return [2]*Result{}, err
	}
	var out [2]*Result
	var errs [2]error
	var wg sync.WaitGroup
	for f, flow := range []struct {
		name     string
		obs      [][]float64
		censored [][]bool
		truth    [][]float64
	}{{"pickups", hist.Pickups, hist.PickupsCensored, d.Pickups}, {"returns", hist.Returns, hist.ReturnsCensored, d.Returns}} {
		obs := flowObs(d, flow.name, flow.obs, flow.censored)
		opts := Options{Spec: o.Spec, Obs: obs, Products: products, Bin: time.Hour, Origin: time.Unix(0, 0).UTC(),
			EvalFrom: o.EvalFrom, Horizon: decisionDay, Horizons: []int{1, 3, 6, 12, 24}, Weeks: o.Weeks, Resmooth: o.Resmooth,
			Warmup: -1, Tail: math.MaxInt32,
			Truth: func(g *Grid) error { return setTruth(g, d, flow.truth) }}
		if o.Progress != nil {
			name := flow.name
			opts.Progress = func(s string) { o.Progress(name + ": " + s) }
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[f], errs[f] = opts.Run(ctx)
			if errs[f] != nil {
				errs[f] = fmt.Errorf("%s model: %w", flow.name, errs[f])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[0], errs[1]); err != nil {
		return out, err
	}
	if !out[0].Grid.Start.Equal(out[1].Grid.Start) || out[0].Grid.Len() != out[1].Grid.Len() || out[0].Forecasts.From != out[1].Forecasts.From {
		return out, errors.New("decision backtest: the two flows' grids differ")
	}
	return out, nil
}

// flowObs is one flow's history as observations: the trips served, and
// where a rider was turned away the cell is censored at that count.
func flowObs(d *Stations, name string, y [][]float64, cens [][]bool) *csvio.Obs {
	o := &csvio.Obs{Name: name, Kind: csvio.Timestamp}
	line := 1
	for i, row := range y {
		t := d.Start.Add(time.Duration(i) * time.Hour)
		hours := float64(t.Unix()) / 3600
		for k, v := range row {
			line++
			u := math.Inf(1)
			if cens[i][k] {
				u = v
			}
			o.Rows = append(o.Rows, csvio.Row{Line: line, TimeText: t.Format(time.RFC3339), Time: hours, Product: d.Names[k],
				Demand: v, Supply: u, Censored: cens[i][k]})
		}
	}
	return o
}

// setTruth writes the true counts into g (same products, bins from
// d.Start).
func setTruth(g *Grid, d *Stations, truth [][]float64) error {
	off := int(g.Start.Sub(d.Start) / time.Hour)
	if off < 0 || off+g.Len() > len(truth) {
		return errors.New("decision backtest: the grid is not inside the data")
	}
	for i := range g.Truth {
		copy(g.Truth[i], truth[off+i])
	}
	return nil
}

func fraction(b [][]bool) float64 {
	var n, c float64
	for _, row := range b {
		for _, v := range row {
			n++
			if v {
				c++
			}
		}
	}
	return c / n
}

// stationInput gathers one station-day's rates for the policies: dcgpd's
// forecasts (means and latent variances), their means plugged in
// (max(m, 0)), the baselines' rates and the day's true counts.
type stationInput struct {
	lam, mu, lamVar, muVar []float64
	hmL, hmM, bowL, bowM   []float64
	plugL, plugM           []float64
	trueL, trueM           []float64
}

func newStationInput() *stationInput {
	mk := func() []float64 { return make([]float64, decisionDay) }
	return &stationInput{lam: mk(), mu: mk(), lamVar: mk(), muVar: mk(), hmL: mk(), hmM: mk(), bowL: mk(), bowM: mk(),
		plugL: mk(), plugM: mk(), trueL: mk(), trueM: mk()}
}

// decide scores every operating day.
func (o DecisionOptions) decide(pls [2]*inventory.Planner, hist *History, flows [2]*Result, res *DecisionResult) error {
	d := o.Data
	gp := flows[0].Grid
	fp, fr := flows[0].Forecasts, flows[1].Forecasts
	day, week := binsPer(24*time.Hour, gp.Width), binsPer(7*24*time.Hour, gp.Width)
	weeks := o.Weeks
	if weeks <= 0 {
		weeks = 4
	}
	base := baselineRates{
		hmP: historicalMean{season{gp, day, week}}, hmR: historicalMean{season{flows[1].Grid, day, week}},
		bowP: binOfWeekMean{season{gp, day, week}, weeks}, bowR: binOfWeekMean{season{flows[1].Grid, day, week}, weeks}}
	off := int(gp.Start.Sub(d.Start) / time.Hour)
	res.initScores(len(o.Horizons))
	c := &policyCall{pl: pls[0], pi: pls[1], in: newStationInput(), hist: hist}
	rep := DayReplay{EmptyBy: make([]bool, decisionDay), FullBy: make([]bool, decisionDay)}
	var buf []bool
	for t := o.EvalFrom; t.Before(o.End); t = t.Add(24 * time.Hour) {
		first := t.Add(time.Duration(o.DayStart) * time.Hour)
		if !first.Add(decisionDay*time.Hour).After(first) || first.Add(decisionDay*time.Hour).After(o.End) {
			break
		}
		gi, ok := gp.Index(first)
		origin := gi - 1 - fp.From
		if !ok || origin < 0 || gi+decisionDay > gp.Len() {
			continue
		}
		c.di = gi + off // bin in d and hist
		for k := range d.Names {
			if !c.in.fill(fp, fr, origin, k, base, gi-1) {
				return fmt.Errorf("decision backtest: station %s has no forecast from %s", d.Names[k], gp.BinStart(gi-1).Format(time.RFC3339))
			}
			c.in.fillTruth(d, c.di, k)
			c.k, c.st = k, inventory.Station{Capacity: d.Capacity[k], Bikes: hist.Start[c.di][k]}
			var err error
			if buf, err = o.scoreStationDay(c, res, &rep, buf); err != nil {
				return fmt.Errorf("decision backtest: station %s, day %s: %w", d.Names[k], first.Format("2006-01-02"), err)
			}
		}
	}
	if res.StationDays == 0 {
		return errors.New("decision backtest: no operating day between the evaluation start and the end")
	}
	res.finishScores()
	return nil
}

// scoreStationDay sets the stock of station c.k on the day from bin c.di
// by every policy and in hindsight, scores the policies' P(empty) and
// P(full) against the day replayed from the history's level, and adds
// each level's unmet trips to res.
func (o DecisionOptions) scoreStationDay(c *policyCall, res *DecisionResult, rep *DayReplay, buf []bool) ([]bool, error) {
	d, k, cap := o.Data, c.k, c.st.Capacity
	// The observed first passages from the history's level.
	buf = replayDay(o.World.Seed, k, cap, c.st.Bikes, c.di, d.Pickups, d.Returns, rep, buf)
	emptyBy, fullBy := append([]bool(nil), rep.EmptyBy...), append([]bool(nil), rep.FullBy...)
	levels := make([]int, len(res.Policies))
	for p, pol := range o.policyList() {
		if err := pol.risk(c); err != nil {
			return buf, err
		}
		levels[p] = c.dst.Best
		res.calibrate(p, &c.dst, emptyBy, fullBy)
	}
	// Hindsight: the best level for the day's actual trips.
	best, bestUnmet := 0, math.MaxInt
	for s := 0; s <= cap; s++ {
		buf = replayDay(o.World.Seed, k, cap, s, c.di, d.Pickups, d.Returns, rep, buf)
		if u := rep.UnmetPickups + rep.UnmetReturns; u < bestUnmet {
			best, bestUnmet = s, u
		}
	}
	levels[len(levels)-1] = best
	for p, s := range levels {
		buf = replayDay(o.World.Seed, k, cap, s, c.di, d.Pickups, d.Returns, rep, buf)
		res.UnmetPickups[p] += float64(rep.UnmetPickups)
		res.UnmetReturns[p] += float64(rep.UnmetReturns)
		res.MeanLevel[p] += float64(s) / float64(cap)
	}
	for j := range decisionDay {
		res.DayBias[0][0] += c.in.plugL[j] - c.in.trueL[j]
		res.DayBias[0][1] += c.in.hmL[j] - c.in.trueL[j]
		res.DayBias[1][0] += c.in.plugM[j] - c.in.trueM[j]
		res.DayBias[1][1] += c.in.hmM[j] - c.in.trueM[j]
	}
	res.StationDays++
	return buf, nil
}

// initScores sizes r's sums for its policies and nh horizons.
func (r *DecisionResult) initScores(nh int) {
	r.UnmetPickups, r.UnmetReturns = make([]float64, len(r.Policies)), make([]float64, len(r.Policies))
	r.MeanLevel = make([]float64, len(r.Policies))
	r.Brier = make([][2][]float64, len(r.Methods))
	r.Reliab = make([][2][10]reliabilityBin, len(r.Methods))
	for m := range r.Methods {
		r.Brier[m] = [2][]float64{make([]float64, nh), make([]float64, nh)}
	}
}

// finishScores turns r's sums into means over the station-days.
func (r *DecisionResult) finishScores() {
	n := float64(r.StationDays)
	for m := range r.Brier {
		for e := range 2 {
			for h := range r.Brier[m][e] {
				r.Brier[m][e][h] /= n
			}
		}
	}
	for p := range r.MeanLevel {
		r.MeanLevel[p] /= n
	}
	for f := range r.DayBias {
		for m := range r.DayBias[f] {
			r.DayBias[f][m] /= n
		}
	}
}

// calibrate adds method m's predicted first passages to the Brier sums
// and the reliability table.
func (r *DecisionResult) calibrate(m int, risk *inventory.Risk, emptyBy, fullBy []bool) {
	for e, ev := range [2]struct {
		p   []float64
		obs []bool
	}{{risk.EmptyWithin, emptyBy}, {risk.FullWithin, fullBy}} {
		for hi, h := range r.Horizons {
			p, o := ev.p[h-1], 0.0
			if ev.obs[h-1] {
				o = 1
			}
			r.Brier[m][e][hi] += (p - o) * (p - o)
			b := min(int(p*10), 9)
			rb := &r.Reliab[m][e][b]
			rb.N++
			rb.SumP += p
			rb.Observed += o
		}
	}
}

// fill loads station k's rates for the day whose forecasts were published
// at origin (index into the forecasts) = grid bin t. It reports false if
// the model published no forecast.
func (in *stationInput) fill(fp, fr *Forecasts, origin, k int, b baselineRates, t int) bool {
	for h := 1; h <= decisionDay; h++ {
		j := h - 1
		in.lam[j], in.lamVar[j] = fp.Mean[h][origin][k], fp.Var[h][origin][k]
		in.mu[j], in.muVar[j] = fr.Mean[h][origin][k], fr.Var[h][origin][k]
		for _, v := range []float64{in.lam[j], in.lamVar[j], in.mu[j], in.muVar[j]} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
		in.lamVar[j], in.muVar[j] = math.Max(in.lamVar[j], 0), math.Max(in.muVar[j], 0)
		in.plugL[j], in.plugM[j] = math.Max(in.lam[j], 0), math.Max(in.mu[j], 0)
		in.hmL[j], _ = b.hmP.predict(t, h, k)
		in.hmM[j], _ = b.hmR.predict(t, h, k)
		in.bowL[j], _ = b.bowP.predict(t, h, k)
		in.bowM[j], _ = b.bowR.predict(t, h, k)
		for _, r := range []*float64{&in.hmL[j], &in.hmM[j], &in.bowL[j], &in.bowM[j]} {
			if math.IsNaN(*r) || *r < 0 {
				*r = 0
			}
		}
	}
	return true
}

// fillTruth loads station k's true counts of the day from bin di of d.
func (in *stationInput) fillTruth(d *Stations, di, k int) {
	for j := range decisionDay {
		in.trueL[j], in.trueM[j] = d.Pickups[di+j][k], d.Returns[di+j][k]
	}
}

// baselineRates are the two baselines of each flow.
type baselineRates struct {
	hmP, hmR   historicalMean
	bowP, bowR binOfWeekMean
}

// formatFloat is a table number.
func formatFloat(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
