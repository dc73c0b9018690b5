package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/app/backtest"
	"github.com/dcgpd/dcgpd/internal/plotstyle"
)

// runBacktest is `dcgpd backtest`: rolling-origin evaluation of the
// daemon's forecasts against the baselines (internal/app/backtest), or
// with --decision the stocking backtest (runDecisionBacktest).
func runBacktest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if rest, ok := decisionMode(args); ok {
		return runDecisionBacktest(ctx, rest, stdout, stderr)
	}
	fs := flag.NewFlagSet("dcgpd backtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := newBacktestFlags(fs)
	fs.Usage = func() { backtestUsage(fs) }
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.check(fs, stderr); err != nil {
		return err
	}
	o, err := f.options(stderr)
	if err != nil {
		return err
	}
	res, err := o.Run(ctx)
	if err != nil {
		return err
	}
	if *f.plotPath != "" {
		if err := backtestPlot(*f.plotPath, res, 3); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	if *f.format == "csv" {
		return res.Report.WriteCSV(stdout)
	}
	return res.Report.WriteTable(stdout)
}

// backtestUsage prints both modes of `dcgpd backtest` and their flags:
// the forecast backtest's and, after -decision, the decision backtest's.
func backtestUsage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintln(out, "usage: dcgpd backtest --obs OBS.csv [flags]   (score forecasts by rolling origin)")
	fmt.Fprintln(out, "       dcgpd backtest --decision --citibike DIR --config MODEL.toml [decision flags]   (stock at s*, count unmet trips)")
	fs.PrintDefaults()
	fmt.Fprintln(out, "  -decision\n    \tthe decision backtest (docs/rebalancing.md); it takes these flags instead of the above:")
	var b strings.Builder
	dfs := flag.NewFlagSet("dcgpd backtest --decision", flag.ContinueOnError)
	dfs.SetOutput(&b)
	newDecisionFlags(dfs)
	dfs.PrintDefaults()
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			fmt.Fprint(out, "    "+line)
		}
	}
}

// backtestFlags are `dcgpd backtest`'s flags.
type backtestFlags struct {
	obsPath          *string
	prodPath         *string
	cfgPath          *string
	truthPath        *string
	evalText         *string
	trainDays        *float64
	horizon          *int
	horizonsText     *string
	weeks            *int
	bin              *time.Duration
	originText       *string
	resmooth         *int
	window           *int
	relearn          *bool
	daemonPath       *string
	daemonModel      *string
	warmup           *int
	by               *string
	unconstrainWeeks *int
	format           *string
	plotPath         *string
	quiet            *bool
}

// newBacktestFlags declares `dcgpd backtest`'s flags on fs.
func newBacktestFlags(fs *flag.FlagSet) *backtestFlags {
	return &backtestFlags{
		obsPath:      fs.String("obs", "", "observations CSV: time,product,demand,supply[,censored] (required)"),
		prodPath:     fs.String("products", "", "products CSV: product,<features> (lat,lon = geographic); optional for independent models"),
		cfgPath:      fs.String("config", "", "model TOML ([model], [fit]; see config.toml): learned on the training span unless it sets [fit] learn = false (a fitted model file)"),
		truthPath:    fs.String("truth", "", "truth CSV: time,product,true_demand (default: score against the observed demand of uncensored cells)"),
		evalText:     fs.String("eval-from", "", "first origin scored, RFC 3339 (default: --train-days after the first bin)"),
		trainDays:    fs.Float64("train-days", 28, "training span in days when --eval-from is not given"),
		horizon:      fs.Int("horizon", 24, "forecast horizon H in bins"),
		horizonsText: fs.String("horizons", "1,3,6,12,24", "horizons scored (each 1..H)"),
		weeks:        fs.Int("weeks", 4, "K of the bin-of-week mean baseline"),
		bin:          fs.Duration("bin", time.Hour, "bin width"),
		originText:   fs.String("origin", "1970-01-01T00:00:00Z", "bin origin, RFC 3339"),
		resmooth:     fs.Int("resmooth-every", 24, "re-smooth every this many bins as the daemon would (0: off)"),
		window:       fs.Int("resmooth-window", config.DefaultModelConfig().Resmooth.Window, "bins each re-smooth (and re-learn) works on, as [models.resmooth] window"),
		relearn:      fs.Bool("relearn", false, "re-learn the hyperparameters at each re-smooth, as [models.resmooth] relearn = true"),
		daemonPath: fs.String("daemon-config", "", "a daemon configuration (dcgpd.toml): run its model's [models.resmooth] and [models.online] "+
			"(and, without --config, its [models.model]/[models.fit] or model_file) instead of the --resmooth-* and --relearn flags"),
		daemonModel:      fs.String("daemon-model", "", "the [[models]] entry of --daemon-config to run (default: its only one)"),
		warmup:           fs.Int("warmup-bins", -1, "bins before the evaluation start streamed first (the daemon starts there from its prior, as one started then); -1: every bin from the first"),
		by:               fs.String("by", "", `"month": the scores per calendar month too (a table, or a leading month column in CSV)`),
		unconstrainWeeks: fs.Int("unconstrain-weeks", 8, "weeks of a product's sales the EM and PD nowcast baselines fit"),
		format:           fs.String("format", "table", "table | csv"),
		plotPath:         fs.String("plot", "", "PNG of the forecast fan against the truth for the most censored products"),
		quiet:            fs.Bool("quiet", false, "no progress on standard error"),
	}
}

// check refuses flags that are missing, out of range or in conflict,
// saying which on stderr.
func (f *backtestFlags) check(fs *flag.FlagSet, stderr io.Writer) error {
	if *f.obsPath == "" {
		fmt.Fprintln(stderr, "dcgpd backtest: --obs is required")
		fs.Usage()
		return errUsage
	}
	if *f.format != "table" && *f.format != "csv" {
		fmt.Fprintf(stderr, "dcgpd backtest: --format %q is not table or csv\n", *f.format)
		return errUsage
	}
	if *f.by != "" && *f.by != "month" {
		fmt.Fprintf(stderr, "dcgpd backtest: --by %q is not month\n", *f.by)
		return errUsage
	}
	if *f.bin <= 0 || *f.horizon < 1 || *f.weeks < 1 || *f.unconstrainWeeks < 1 || *f.resmooth < 0 || *f.window < 2 || !(*f.trainDays > 0) {
		fmt.Fprintln(stderr, "dcgpd backtest: --bin, --horizon, --weeks, --unconstrain-weeks and --train-days must be positive, --resmooth-every >= 0, --resmooth-window >= 2")
		return errUsage
	}
	if *f.daemonPath != "" && (setFlag(fs, "resmooth-every") || setFlag(fs, "resmooth-window") || setFlag(fs, "relearn")) {
		fmt.Fprintln(stderr, "dcgpd backtest: --daemon-config sets the re-smoothing; give it or --resmooth-every, --resmooth-window and --relearn")
		return errUsage
	}
	return nil
}

// options reads the inputs the flags name and builds the backtest's
// options; progress goes to stderr unless --quiet.
func (f *backtestFlags) options(stderr io.Writer) (backtest.Options, error) {
	horizons, err := parseHorizons(*f.horizonsText, *f.horizon)
	if err != nil {
		return backtest.Options{}, err
	}
	origin, err := time.Parse(time.RFC3339, *f.originText)
	if err != nil {
		return backtest.Options{}, fmt.Errorf("--origin: %w", err)
	}
	sp, obs, prods, err := readInputs(*f.cfgPath, *f.obsPath, *f.prodPath)
	if err != nil {
		return backtest.Options{}, err
	}
	o := backtest.Options{Spec: sp, Obs: obs, Products: prods, Bin: *f.bin, Origin: origin, Horizon: *f.horizon,
		Horizons: horizons, Weeks: *f.weeks, UnconstrainWeeks: *f.unconstrainWeeks, ByMonth: *f.by == "month", Warmup: *f.warmup}
	if *f.daemonPath != "" {
		dm, err := daemonModelConfig(*f.daemonPath, *f.daemonModel)
		if err != nil {
			return backtest.Options{}, err
		}
		o.Resmooth, o.Online = &dm.Resmooth, &dm.Online
		if *f.cfgPath == "" {
			o.Spec = spec.Spec{Model: dm.Model, Fit: dm.Fit}
		}
	} else {
		rs := config.DefaultModelConfig().Resmooth
		rs.EveryBins, rs.Window, rs.Relearn = *f.resmooth, *f.window, *f.relearn
		o.Resmooth = &rs
	}
	if !*f.quiet {
		o.Progress = func(s string) { fmt.Fprintln(stderr, s) }
	}
	if truth := *f.truthPath; truth != "" {
		o.Truth = func(g *backtest.Grid) error {
			file, err := os.Open(truth)
			if err != nil {
				return err
			}
			defer file.Close()
			return backtest.ReadTruth(file, truth, g)
		}
	}
	if *f.evalText != "" {
		if o.EvalFrom, err = time.Parse(time.RFC3339, *f.evalText); err != nil {
			return backtest.Options{}, fmt.Errorf("--eval-from: %w", err)
		}
	} else {
		o.Train = time.Duration(*f.trainDays * float64(24*time.Hour))
	}
	return o, nil
}

// setFlag reports whether the flag name was given.
func setFlag(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// daemonModelConfig is the model entry name (or the only one) of the
// daemon configuration at path.
func daemonModelConfig(path, name string) (config.ModelConfig, error) {
	c, err := config.LoadConfig(path)
	if err != nil {
		return config.ModelConfig{}, fmt.Errorf("--daemon-config: %w", err)
	}
	if name == "" {
		if len(c.Models) != 1 {
			return config.ModelConfig{}, fmt.Errorf("--daemon-config %s has %d models: name one with --daemon-model", path, len(c.Models))
		}
		return c.Models[0], nil
	}
	for _, m := range c.Models {
		if m.Name == name {
			return m, nil
		}
	}
	return config.ModelConfig{}, fmt.Errorf("--daemon-model: %s has no model %q", path, name)
}

// parseHorizons parses a comma-separated list of horizons in 1..h.
func parseHorizons(s string, h int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 || v > h {
			return nil, fmt.Errorf("--horizons: %q is not a horizon in 1..%d (--horizon)", f, h)
		}
		out = append(out, v)
	}
	return out, nil
}

// backtestPlot writes a PNG with one panel per product for the n most
// censored products over the last week of the evaluation span: the true
// demand, and the forecasts made 1 and H bins ahead (mean and the 90%
// interval of the 1-bin-ahead one, clamped at 0).
func backtestPlot(path string, res *backtest.Result, n int) error {
	g, f := res.Grid, res.Forecasts
	np := len(g.Products)
	frac := make([]float64, np)
	for i := f.From; i < g.Len(); i++ {
		for k := range frac {
			if g.Censored[i][k] {
				frac[k]++
			}
		}
	}
	order := make([]int, np)
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return frac[order[a]] > frac[order[b]] })
	n = min(n, np)
	from := max(f.From+f.H, g.Len()-7*24)
	plots := make([][]*plot.Plot, n)
	for j := range n {
		p, err := fanPanel(g, f, order[j], from, j == 0)
		if err != nil {
			return err
		}
		p.Title.Text = fmt.Sprintf("%s: %.0f%% of the plotted bins censored", g.Products[order[j]], 100*frac[order[j]]/float64(max(1, g.Len()-f.From)))
		plots[j] = []*plot.Plot{p}
	}
	c := vgimg.PngCanvas{Canvas: vgimg.New(28*vg.Centimeter, vg.Length(n)*7*vg.Centimeter)}
	canvases := plot.Align(plots, draw.Tiles{Rows: n, Cols: 1, PadY: 4 * vg.Millimeter, PadTop: 2 * vg.Millimeter,
		PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}, draw.New(c))
	for j := range n {
		plots[j][0].Draw(canvases[j][0])
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fanPanel draws product k from bin `from` to the end: truth, the 1-bin
// and H-bin-ahead forecasts of each bin, the 90% band of the 1-bin one.
func fanPanel(g *backtest.Grid, f *backtest.Forecasts, k, from int, legend bool) (*plot.Plot, error) {
	var truth, one, far, upper, lower plotter.XYs
	x0 := g.BinStart(from)
	for i := from; i < g.Len(); i++ {
		x := g.BinStart(i).Sub(x0).Hours() / 24
		if y := g.Truth[i][k]; !math.IsNaN(y) {
			truth = append(truth, plotter.XY{X: x, Y: y})
		}
		if o := i - 1 - f.From; o >= 0 && !math.IsNaN(f.Mean[1][o][k]) {
			m, sd := f.Mean[1][o][k], math.Sqrt(math.Max(f.PredVar[1][o][k], 0))
			one = append(one, plotter.XY{X: x, Y: math.Max(m, 0)})
			upper = append(upper, plotter.XY{X: x, Y: math.Max(m+z95*sd, 0)})
			lower = append(lower, plotter.XY{X: x, Y: math.Max(m-z95*sd, 0)})
		}
		if o := i - f.H - f.From; o >= 0 && !math.IsNaN(f.Mean[f.H][o][k]) {
			far = append(far, plotter.XY{X: x, Y: math.Max(f.Mean[f.H][o][k], 0)})
		}
	}
	p := plot.New()
	p.Y.Label.Text = "demand per bin"
	p.X.Label.Text = "days"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	if len(upper) > 1 {
		band := append(plotter.XYs{}, upper...)
		for i := len(lower) - 1; i >= 0; i-- {
			band = append(band, lower[i])
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return nil, err
		}
		poly.Color, poly.LineStyle.Width = plotstyle.Band, 0
		p.Add(poly)
	}
	for i, s := range []struct {
		xy    plotter.XYs
		label string
	}{{truth, "true demand"}, {one, "forecast 1 bin ahead (90% band)"}, {far, fmt.Sprintf("forecast %d bins ahead", f.H)}} {
		if len(s.xy) < 2 {
			continue
		}
		l, err := plotter.NewLine(s.xy)
		if err != nil {
			return nil, err
		}
		l.Width = vg.Points(0.8)
		switch i {
		case 0:
			l.Color = plotstyle.True
		case 1:
			l.Color = plotstyle.Mean
		default:
			l.Color = plotstyle.Censored
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		}
		p.Add(l)
		if legend {
			p.Legend.Add(s.label, l)
		}
	}
	p.Legend.Top = true
	return p, nil
}
