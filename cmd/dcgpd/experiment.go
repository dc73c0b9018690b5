package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dcgpd/dcgpd/internal/experiment"
)

func runExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd experiment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataset := fs.String("dataset", "all", "A | B | C | ST1 | ST2 | all (comma-separated list allowed)")
	models := fs.String("models", strings.Join(experiment.Models, ","), "models to fit, comma-separated")
	format := fs.String("format", "table", "table | csv")
	seed := fs.Uint64("seed", 123, "seed of the data generator")
	expectation := fs.String("expectation", "", "diffusion expectation: joint (default) | meanonly")
	sites := fs.String("sites", "", "diffusion sites: full | diagonal (default: the configuration's)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	names := experiment.Datasets
	if *dataset != "all" {
		names = strings.Split(*dataset, ",")
	}
	var w *csv.Writer
	if *format == "csv" {
		w = csv.NewWriter(stdout)
		_ = w.Write([]string{"dataset", "model", "split", "nlpd", "rmse", "r2", "rmse_funct", "seconds"})
	} else if *format != "table" {
		return fmt.Errorf("--format %q: want table or csv", *format)
	} else {
		fmt.Fprintf(stdout, "%-8s %-7s %-5s %8s %7s %7s %10s %8s\n", "dataset", "model", "split", "nlpd", "rmse", "r2", "rmse_funct", "seconds")
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, name := range names {
		ds, err := experiment.Generate(strings.TrimSpace(name), *seed)
		if err != nil {
			return err
		}
		for _, m := range strings.Split(*models, ",") {
			m = strings.TrimSpace(m)
			fmt.Fprintf(stderr, "fitting %s on %s...\n", m, ds.Name)
			rows, _, err := experiment.Score(ctx, ds, m, experiment.Options{Seed: *seed, Expectation: *expectation, Sites: *sites})
			if err != nil {
				return err
			}
			for _, r := range rows {
				if w != nil {
					_ = w.Write([]string{r.Dataset, r.Model, r.Split, f(r.NLPD), f(r.RMSE), f(r.R2), f(r.RMSEFunct), strconv.FormatFloat(r.Seconds, 'f', 3, 64)})
					w.Flush()
				} else {
					fmt.Fprintf(stdout, "%-8s %-7s %-5s %8.3f %7.3f %7.3f %10.3f %8.2f\n", r.Dataset, r.Model, r.Split, r.NLPD, r.RMSE, r.R2, r.RMSEFunct, r.Seconds)
				}
			}
		}
	}
	if w != nil {
		w.Flush()
		return w.Error()
	}
	return nil
}
