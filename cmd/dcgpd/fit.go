package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/stream/csvio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// z95 is the standard normal 95% quantile: q05/q95 = mean ∓ z95·sd.
const z95 = 1.6448536269514722

// runFit is `dcgpd fit`: flags, the batch files, spec.Learn (fitGrid),
// then the posterior per OBS row.
func runFit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd fit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	obsPath := fs.String("obs", "", "observations CSV: time,product,demand,supply[,censored] (required)")
	prodPath := fs.String("products", "", "products CSV: product,<features> (lat,lon = geographic); optional for independent models")
	outPath := fs.String("out", "", "posterior CSV to write (default: standard output)")
	cfgPath := fs.String("config", "", "model configuration TOML (see config.toml)")
	lik := fs.String("likelihood", "", "gaussian | tobit | diffusion | poisson | censored-poisson (overrides the config)")
	quiet := fs.Bool("quiet", false, "no progress on standard error")
	savePath := fs.String("save-model", "", "write the fitted model (hyperparameters in user units, [fit] learn = false) to this TOML file, for fit --config, serve (model_file) and backtest --config")
	var trips tripInputs
	fs.StringVar(&trips.trips, "trips", "", "trip-count CSV time,station,pickups,dropoffs instead of --obs: the counts of --flow are the demand, uncensored (a count says nothing of the stock)")
	fs.StringVar(&trips.flow, "flow", csvio.FlowPickups, "with --trips: pickups | dropoffs")
	fs.StringVar(&trips.stations, "stations", "", "with --trips: stations CSV station,name,lat,lon,capacity (the products: lat,lon features, capacity for the pooled prior mean)")
	fs.BoolVar(&trips.zeros, "trips-zeros", false, "with --trips: a station without a row at a time of the file had no trip then (0); default: not observed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*obsPath == "") == (trips.trips == "") || (trips.stations != "" && *prodPath != "") {
		fmt.Fprintln(stderr, "dcgpd fit: give --obs or --trips (one of them), and --stations (with --trips) or --products, not both")
		fs.Usage()
		return errUsage
	}
	sp, obs, prods, err := readFitInputs(*cfgPath, *obsPath, *prodPath, trips)
	if err != nil {
		return err
	}
	grid, err := csvio.Build(obs, prods)
	if err != nil {
		return err
	}
	if err := grid.Data.Validate(); err != nil {
		return fmt.Errorf("%s: %w", *obsPath, err)
	}
	progress := stderr
	if *quiet {
		progress = io.Discard
	}
	res, err := fitGrid(ctx, grid.Data, prods, sp, *lik, progress)
	if err != nil {
		return err
	}
	if *savePath != "" {
		src := fitSource{obs: obs.Name, products: orStations(*prodPath, trips.stations), config: *cfgPath, first: obs.Rows[0].TimeText, last: obs.Rows[len(obs.Rows)-1].TimeText,
			bins: len(grid.Data.Times), np: grid.Data.NP}
		if err := saveModel(*savePath, sp, res, src); err != nil {
			return err
		}
		fmt.Fprintf(progress, "fitted model written to %s\n", *savePath)
	}
	return writeFitPosterior(*outPath, stdout, obs, grid, res)
}

// writeFitPosterior writes the posterior of every OBS row to path (stdout
// when empty); for the count likelihoods the demand is the rate μ(f) and
// the log-rate's moments go to two extra columns.
func writeFitPosterior(path string, stdout io.Writer, obs *csvio.Obs, grid *csvio.Grid, res *fitResult) error {
	rows := make([]csvio.Estimate, len(obs.Rows))
	link, counts := rateLink(res.built)
	var latent []float64 // for count likelihoods: the log-rate's mean and variance per row
	if counts {
		latent = make([]float64, 2*len(obs.Rows))
	}
	for i, r := range obs.Rows {
		c := grid.Cell[i]
		m, v := res.post.Mean[c], res.post.Var[c]
		if counts {
			// The demand is the rate μ(f); f (the log-rate) goes to extra columns.
			mu, vmu, q05, q95 := link.RateMoments(m, math.Max(v, 0))
			latent[2*i], latent[2*i+1] = m, v
			rows[i] = csvio.Estimate{Time: r.TimeText, Product: r.Product, Mean: mu, Var: vmu, PredVar: mu + vmu, Q05: q05, Q95: q95}
			continue
		}
		rows[i] = gaussianRow(r.TimeText, r.Product, m, v, res.noise)
	}
	out := stdout
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	write := func() error { return csvio.WritePosterior(out, rows) }
	if counts {
		write = func() error { return writeCountPosterior(out, rows, latent) }
	}
	if err := write(); err != nil {
		return fmt.Errorf("writing posterior: %w", err)
	}
	if f, ok := out.(*os.File); ok && f != os.Stdout {
		return f.Close()
	}
	return nil
}

// readProducts reads the products CSV at path, or, without one, takes
// the products the observations name (no features).
// readInputs reads what fit and backtest start from: the model
// configuration (the defaults when cfgPath is empty), the observations
// and the products.
func readInputs(cfgPath, obsPath, prodPath string) (spec.Spec, *csvio.Obs, *csvio.Products, error) {
	var sp spec.Spec
	if cfgPath != "" {
		var err error
		if sp, err = spec.Load(cfgPath); err != nil {
			return sp, nil, nil, err
		}
	}
	obs, err := readObs(obsPath)
	if err != nil {
		return sp, nil, nil, err
	}
	prods, err := readProducts(prodPath, obs)
	if err != nil {
		return sp, nil, nil, err
	}
	return sp, obs, prods, nil
}

func readProducts(path string, obs *csvio.Obs) (*csvio.Products, error) {
	if path == "" {
		return csvio.FromObs(obs), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return csvio.ReadProducts(f, path)
}

func readObs(path string) (*csvio.Obs, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return csvio.ReadObs(f, path)
}

// fitResult is a fitted model's posterior over the data grid.
type fitResult struct {
	post    filter.Posterior
	noise   float64
	engine  *cvi.Engine
	learned cvi.Result
	built   *spec.Built
	sum     spec.Summary
	elapsed time.Duration
}

// fitGrid builds the configured model for data and fits it (staged for
// the diffusion likelihood unless [fit] staged = false; see spec.Learn).
func fitGrid(ctx context.Context, data *cvi.Data, prods *csvio.Products, sp spec.Spec, lik string, progress io.Writer) (*fitResult, error) {
	start := time.Now()
	sum := spec.Summarise(data, prods.Features, prods.Geographic)
	sum.Names, sum.Capacity = prods.Names, prods.Capacity
	f, err := sp.Learn(ctx, data, sum, lik, func(stage string, p cvi.Progress) {
		rule := ""
		if p.Rule != "" {
			rule = "  [" + p.Rule + "]"
		}
		fmt.Fprintf(progress, "%s iteration %4d  ELBO %.6f%s  max|grad| %.3g (test %.3g)  (%.1fs)\n",
			stage, p.Iter, p.ELBO, rule, p.Gradient, p.GradTol, time.Since(start).Seconds())
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("interrupted")
		}
		if errors.Is(err, cvi.ErrNumerical) {
			return nil, fmt.Errorf("%w\n  (the hyperparameters reached values where the model cannot be evaluated: fix the ones that drift in the configuration, e.g. fixed_params or noise_fixed, or start them nearer the data's scale)", err)
		}
		return nil, err
	}
	b, e := f.Built, f.Engine
	r := &fitResult{engine: e, built: b, learned: f.Result, sum: sum}
	if err := e.PredictAll(&r.post); err != nil {
		return nil, err
	}
	// The engine saw the data less the prior mean: the posterior gets it back.
	b.Mean.AddAll(data.Times, data.NP, r.post.Mean)
	r.noise = b.Lik.NoiseVariance()
	r.elapsed = time.Since(start)
	for _, st := range f.Stages {
		fmt.Fprintf(progress, "stage %s: ELBO %.6f after %d iterations, %s (%s) in %.2fs; the next stage starts from its hyperparameters\n",
			st.Likelihood, st.Result.ELBO, st.Result.Iterations, st.Result.Status, st.Result.Detail, st.Elapsed.Seconds())
	}
	res := r.learned
	rule := ""
	if res.FinalRule != "" {
		rule = " (" + res.FinalRule + ")"
	}
	fmt.Fprintf(progress, "fitted %s likelihood: ELBO %.6f%s after %d iterations (%d CVI steps) in %.2fs\n",
		likName(b), res.ELBO, rule, res.Iterations, res.CVISteps, r.elapsed.Seconds())
	if res.SearchRule != res.FinalRule {
		fmt.Fprintf(progress, "  the search's ELBO at these hyperparameters was %.6f with the %s; the final posterior is re-fitted with the %s\n",
			res.SearchELBO, res.SearchRule, res.FinalRule)
	}
	fmt.Fprintf(progress, "  status: %s: %s\n", res.Status, res.Detail)
	if b.Pooling.Pooled() > 0 {
		fmt.Fprintf(progress, "  prior mean: %s\n", b.Pooling)
	}
	for _, w := range append(f.Warnings, res.Warnings...) {
		fmt.Fprintf(progress, "  warning: %s\n", w)
	}
	unmoved := map[string]bool{}
	for _, n := range res.Unmoved {
		unmoved[n] = true
	}
	for _, p := range b.Parameters() {
		state := "learned"
		switch {
		case b.Fixed[p.Name]:
			state = "fixed"
		case !b.Learn:
			state = "not learned"
		case unmoved[p.Name]:
			state = "learned, but not moved from its start"
		}
		fmt.Fprintf(progress, "  %-34s %12.6g  (%s)\n", p.Name, p.Value, state)
	}
	return r, nil
}

func likName(b *spec.Built) string {
	l := any(b.Lik)
	if f, ok := l.(cvi.Factorised); ok {
		l = f.Scalar
	}
	switch d := l.(type) {
	case *cvi.Diffusion:
		return "diffusion (" + d.SiteStructure().String() + " sites)"
	case *cvi.Gaussian:
		return "gaussian"
	case *cvi.Tobit:
		return "tobit"
	case *cvi.Poisson:
		return "poisson"
	case *cvi.CensoredPoisson:
		return "censored-poisson"
	}
	return fmt.Sprintf("%T", l)
}

// rateLink returns the link of a count likelihood (Poisson, censored
// Poisson), whose latent f is the link's argument rather than the demand,
// and whether b's likelihood is one.
func rateLink(b *spec.Built) (cvi.Link, bool) {
	l := any(b.Lik)
	if f, ok := l.(cvi.Factorised); ok {
		l = f.Scalar
	}
	if r, ok := l.(cvi.RateLinker); ok {
		return r.Link(), true
	}
	return 0, false
}

// writeCountPosterior writes the POSTERIOR CSV of a count likelihood: the
// usual columns, which describe the demand rate, and the latent log-rate's
// mean and variance per row (latent[2i], latent[2i+1]) in log_rate_mean and
// log_rate_var.
func writeCountPosterior(w io.Writer, rows []csvio.Estimate, latent []float64) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"time", "product", "mean", "var", "pred_var", "q05", "q95", "log_rate_mean", "log_rate_var"}); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for i, r := range rows {
		rec := []string{r.Time, r.Product, f(r.Mean), f(r.Var), f(r.PredVar), f(r.Q05), f(r.Q95), f(latent[2*i]), f(latent[2*i+1])}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// fitSource describes what a model was fitted on, for the model file's
// header.
type fitSource struct {
	obs, products, config string
	first, last           string
	bins, np              int
}

// saveModel writes the fitted model of res (configured by sp) to path as
// a model configuration: the fitted hyperparameters as its values and
// [fit] learn = false, so loading it gives them back bit for bit.
func saveModel(path string, sp spec.Spec, res *fitResult, src fitSource) error {
	fitted, err := sp.Fitted(res.built, res.sum)
	if err != nil {
		return fmt.Errorf("--save-model: %w", err)
	}
	r := res.learned
	orNone := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	header := []string{
		"dcgpd model file written by `dcgpd fit --save-model`: the fitted hyperparameters in user units",
		"(time in hours). Read by `dcgpd fit --config`, `dcgpd backtest --config` and `dcgpd serve`",
		"(model_file in a [[models]] entry). [fit] learn = false: fitting with it again keeps these values.",
		"",
		fmt.Sprintf("fitted on: obs %s, products %s, config %s", src.obs, orNone(src.products), orNone(src.config)),
		fmt.Sprintf("span: %s to %s, %d bins x %d products", src.first, src.last, src.bins, src.np),
		fmt.Sprintf("likelihood %s: ELBO %s after %d iterations; status: %s: %s", res.built.Likelihood, strconv.FormatFloat(r.ELBO, 'g', -1, 64), r.Iterations, r.Status, r.Detail),
	}
	var buf bytes.Buffer
	if err := fitted.Encode(&buf, header); err != nil {
		return fmt.Errorf("--save-model: %w", err)
	}
	if err := writeFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--save-model: %w", err)
	}
	return nil
}

// gaussianRow is a posterior row of a Gaussian latent demand f ~ N(m, v):
// the daemon's estimate (wire.NewEstimate), so that q05 and q95 have one
// definition in fit and serve: the quantiles of the demand max(f, 0).
func gaussianRow(time, product string, m, v, noise float64) csvio.Estimate {
	e := wire.NewEstimate(product, m, v, noise)
	return csvio.Estimate{Time: time, Product: product, Mean: e.Mean, Var: e.Var, PredVar: e.PredVar, Q05: e.Q05, Q95: e.Q95}
}
