package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/dcgpd/dcgpd/internal/experiment"
	"github.com/dcgpd/dcgpd/internal/synth"
)

func runExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd experiment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataset := fs.String("dataset", "all", "A | B | C | ST1 | ST2 | all | citibike (comma-separated list allowed)")
	models := fs.String("models", strings.Join(experiment.Models, ","), "models to fit, comma-separated (also DCGP-full, DCGP-diag: DCGP-f with that site structure; citibike default: "+strings.Join(experiment.CitiBikeModels, ",")+")")
	format := fs.String("format", "table", "table | csv")
	seed := fs.Uint64("seed", 123, "seed of the data generator")
	expectation := fs.String("expectation", "", "diffusion expectation: joint (default) | meanonly")
	sites := fs.String("sites", "", "diffusion sites of DCGP-f and DCGP-l: full | diagonal (default: the configuration's)")
	bikeDir := fs.String("citibike-dir", synth.CitiBikeDir, "directory of the Citi Bike counts (counts_2018.csv, stations.csv)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	modelsSet := false
	fs.Visit(func(f *flag.Flag) { modelsSet = modelsSet || f.Name == "models" })
	names := experiment.Datasets
	if *dataset != "all" {
		names = strings.Split(*dataset, ",")
	}
	var w *csv.Writer
	if *format == "csv" {
		w = csv.NewWriter(stdout)
		_ = w.Write([]string{"dataset", "model", "split", "nlpd", "rmse", "r2", "rmse_funct", "seconds", "iterations", "status", "peak_mb"})
	} else if *format != "table" {
		return fmt.Errorf("--format %q: want table or csv", *format)
	} else {
		fmt.Fprintf(stdout, "%-14s %-9s %-5s %8s %7s %7s %10s %8s %5s %-22s %8s\n", "dataset", "model", "split", "nlpd", "rmse", "r2", "rmse_funct", "seconds", "iter", "status", "peak_mb")
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	var failed []string
	for _, name := range names {
		name = strings.TrimSpace(name)
		ms := *models
		var sets []*synth.Dataset
		if strings.EqualFold(name, "citibike") {
			var err error
			if sets, err = experiment.CitiBike(*bikeDir, *seed); err != nil {
				return fmt.Errorf("citibike (the data lives in ../shared/data/citibike; --citibike-dir): %w", err)
			}
			if !modelsSet {
				ms = strings.Join(experiment.CitiBikeModels, ",")
			}
		} else {
			ds, err := experiment.Generate(name, *seed)
			if err != nil {
				return err
			}
			sets = []*synth.Dataset{ds}
		}
		for _, ds := range sets {
			for _, m := range strings.Split(ms, ",") {
				m = strings.TrimSpace(m)
				fmt.Fprintf(stderr, "fitting %s on %s...\n", m, ds.Name)
				rows, _, err := experiment.Score(ctx, ds, m, experiment.Options{Seed: *seed, Expectation: *expectation, Sites: *sites})
				if err != nil {
					if ctx.Err() != nil {
						return err
					}
					// One failed fit does not lose the rest of the table: it
					// shows as a row with NaN scores, and the run fails at
					// the end.
					fmt.Fprintf(stderr, "dcgpd experiment: %v\n", err)
					failed = append(failed, m+" on "+ds.Name)
					nan := math.NaN()
					rows = []experiment.Row{{Dataset: ds.Name, Model: m, Split: "-", NLPD: nan, RMSE: nan, R2: nan, RMSEFunct: nan, Seconds: nan, Status: "failed"}}
				}
				for _, r := range rows {
					if w != nil {
						_ = w.Write([]string{r.Dataset, r.Model, r.Split, f(r.NLPD), f(r.RMSE), f(r.R2), f(r.RMSEFunct), strconv.FormatFloat(r.Seconds, 'f', 3, 64),
							strconv.Itoa(r.Iterations), r.Status, strconv.FormatFloat(r.PeakMB, 'f', 1, 64)})
						w.Flush()
					} else {
						fmt.Fprintf(stdout, "%-14s %-9s %-5s %8.3f %7.3f %7.3f %10.3f %8.2f %5d %-22s %8.1f\n", r.Dataset, r.Model, r.Split, r.NLPD, r.RMSE, r.R2, r.RMSEFunct, r.Seconds, r.Iterations, r.Status, r.PeakMB)
					}
				}
			}
		}
	}
	if w != nil {
		w.Flush()
		if err := w.Error(); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d fit(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}
