package backtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/csvio"
)

// Options configure a backtest.
type Options struct {
	// Spec is the model ([model] and [fit] of a model TOML). With [fit]
	// learn unset or true it is learned on the training span first;
	// with learn = false its values are used as given.
	Spec spec.Spec
	// Obs and Products are the data; Truth, if not nil, sets the truth
	// (ReadTruth) after the grid is built.
	Obs      *csvio.Obs
	Products *csvio.Products
	Truth    func(g *Grid) error
	// Bin is the bin width, Origin aligns the bins.
	Bin    time.Duration
	Origin time.Time
	// EvalFrom is the first origin scored: learning sees only the bins
	// before it. Zero: Train after the first bin.
	EvalFrom time.Time
	Train    time.Duration
	// Horizon is H, the longest forecast; Horizons are the ones scored.
	Horizon  int
	Horizons []int
	// Weeks is K of the bin-of-week mean (default 4).
	Weeks int
	// UnconstrainWeeks is how many weeks the unconstraining baselines fit
	// (default 8).
	UnconstrainWeeks int
	// ByMonth adds the scores per calendar month (Report.Periods).
	ByMonth bool
	// Resmooth is the daemon's re-smoothing and re-learning
	// ([models.resmooth]), Online its per-bin step ([models.online]); the
	// daemon's defaults when nil (stream.DefaultModelConfig).
	Resmooth *config.ResmoothConfig
	Online   *config.OnlineConfig
	// Warmup is how many bins before EvalFrom are streamed (the runner
	// starts there from its prior, as a daemon started then); negative:
	// every bin from the first (the filter runs over the training span).
	Warmup int
	// Tail is how many of the last origins' forecasts Result.Forecasts
	// keeps (default a week of bins and the horizon: what the plot draws);
	// every origin is scored as it is published and not kept.
	Tail int
	// Progress, if not nil, receives one line per stage.
	Progress func(string)
}

// Result is a backtest's report with the data and forecasts behind it.
type Result struct {
	Report *Report
	Grid   *Grid
	// Forecasts are the last Options.Tail origins' forecasts.
	Forecasts *Forecasts
	// Model is the model the daemon ran (with learned values).
	Model config.ModelConfig
	// Learn, Stream are the times spent learning and streaming.
	Learn, Stream time.Duration
}

// Run runs a backtest: learn (if asked) on the bins before EvalFrom,
// stream every bin through the daemon's runner, score from EvalFrom on.
func (o Options) Run(ctx context.Context) (*Result, error) {
	g, err := NewGrid(o.Obs, o.Products.Names, o.Origin, o.Bin)
	if err != nil {
		return nil, err
	}
	if o.Truth != nil {
		if err := o.Truth(g); err != nil {
			return nil, err
		}
	}
	if o.EvalFrom.IsZero() {
		o.EvalFrom = g.Start.Add(o.Train)
	}
	from, ok := g.Index(o.EvalFrom)
	if !ok || from == 0 {
		return nil, fmt.Errorf("the evaluation start %s is not inside the data (%s to %s) after a training span",
			o.EvalFrom.Format(time.RFC3339), g.Start.Format(time.RFC3339), g.BinStart(g.Len()).Format(time.RFC3339))
	}
	if o.Horizon < 1 {
		return nil, errors.New("the horizon must be at least 1")
	}
	res := &Result{Grid: g}
	m := config.DefaultModelConfig()
	m.Name, m.Bin, m.Origin, m.Horizon = "backtest", config.Duration{Duration: o.Bin}, o.Origin, o.Horizon
	if o.Resmooth != nil {
		m.Resmooth = *o.Resmooth
	}
	if o.Online != nil {
		m.Online = *o.Online
	}
	m.Geographic = o.Products.Geographic
	for k, p := range o.Products.Names {
		pc := config.ProductConfig{Name: p}
		if k < len(o.Products.Features) {
			pc.Features = o.Products.Features[k]
		}
		m.Product = append(m.Product, pc)
	}
	m.Model, m.Fit = o.Spec.Model, o.Spec.Fit
	if o.Spec.Fit.Learn == nil || *o.Spec.Fit.Learn {
		began := time.Now()
		until := float64(g.BinStart(from).UnixNano()) / float64(time.Hour)
		if m.Model, err = Learn(ctx, o.Spec, o.Obs, o.Products, until, o.Progress); err != nil {
			return nil, err
		}
		res.Learn = time.Since(began)
	}
	res.Model = m
	sc, err := newScorer(g, o.Horizon, ScoreOptions{Horizons: o.Horizons, Weeks: o.Weeks, UnconstrainWeeks: o.UnconstrainWeeks, ByMonth: o.ByMonth})
	if err != nil {
		return nil, err
	}
	tail := o.Tail
	if tail <= 0 {
		tail = binsPer(7*24*time.Hour, o.Bin) + o.Horizon
	}
	began := time.Now()
	start := 0
	if o.Warmup >= 0 {
		start = max(0, from-o.Warmup)
	}
	if res.Forecasts, err = Run(ctx, g, m, RunOptions{Start: start, From: max(from, g.Len()-tail), score: sc, scoreFrom: from}); err != nil {
		return nil, err
	}
	res.Stream = time.Since(began)
	if o.Progress != nil {
		o.Progress(fmt.Sprintf("streamed %d bins × %d products through the daemon's runner in %.2fs; re-smooths by outcome %v, %.2fs in all",
			g.Len()-start, len(g.Products), res.Stream.Seconds(), res.Forecasts.Resmooths, res.Forecasts.ResmoothTime.Seconds()))
	}
	res.Report = sc.report(from)
	return res, nil
}
