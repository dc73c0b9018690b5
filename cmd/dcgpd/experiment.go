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

	"github.com/dcgpd/dcgpd/internal/app/experiment"
	"github.com/dcgpd/dcgpd/internal/app/synth"
)

func runExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd experiment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataset := fs.String("dataset", "all", "A | B | C | ST1 | ST2 | all | citibike | sales (comma-separated list allowed)")
	models := fs.String("models", strings.Join(experiment.Models, ","), "models to fit, comma-separated (also DCGP-full, DCGP-diag: DCGP-f with that site structure; citibike default: "+strings.Join(experiment.CitiBikeModels, ",")+")")
	format := fs.String("format", "table", "table | csv")
	seed := fs.Uint64("seed", 123, "seed of the data generator")
	expectation := fs.String("expectation", "", "diffusion expectation: joint (default) | meanonly")
	sites := fs.String("sites", "", "diffusion sites of DCGP-f and DCGP-l: full | diagonal (default: the configuration's)")
	bikeDir := fs.String("citibike-dir", synth.CitiBikeDir, "directory of the Citi Bike counts (counts_2018.csv, stations.csv)")
	salesDir := fs.String("data", experiment.SalesDir, "sales: directory of the supermarket sales (daily.csv)")
	seeds := fs.Int("seeds", 1, "sales: number of seeds of the censoring and split, from --seed on; the table ends with their mean ± sd")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	modelsSet := false
	fs.Visit(func(f *flag.Flag) { modelsSet = modelsSet || f.Name == "models" })
	names := experiment.Datasets
	if *dataset != "all" {
		names = strings.Split(*dataset, ",")
	}
	out, err := newRowWriter(stdout, *format)
	if err != nil {
		return err
	}
	if *seeds < 1 {
		return fmt.Errorf("--seeds %d: want at least 1", *seeds)
	}
	var failed []string
	var salesRows []experiment.Row
	for _, name := range names {
		name = strings.TrimSpace(name)
		src := dataSource{bikeDir: *bikeDir, salesDir: *salesDir, seed: *seed, seeds: *seeds}
		sets, ms, err := experimentSets(name, *models, modelsSet, src)
		if err != nil {
			return err
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
					out.write(r)
				}
				if strings.EqualFold(name, "sales") {
					salesRows = append(salesRows, rows...)
				}
			}
		}
	}
	if err := out.close(); err != nil {
		return err
	}
	if len(salesRows) > 0 && *format == "table" {
		writeSalesSummary(stdout, salesRows, strings.Split(*models, ","))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d fit(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// dataSource says where the real data sets are and which seeds to draw.
type dataSource struct {
	bikeDir, salesDir string
	seed              uint64
	seeds             int // sales only
}

// experimentSets returns the data sets named name (one paper data set
// regenerated with seed, the Citi Bike clusters from bikeDir, or the
// sales splits of every seed from salesDir) and the models to fit on
// them: models, or for Citi Bike its own list unless --models was given.
func experimentSets(name, models string, modelsSet bool, src dataSource) ([]*synth.Dataset, string, error) {
	seed := src.seed
	if strings.EqualFold(name, "sales") {
		sets, err := salesSets(src)
		return sets, models, err
	}
	if strings.EqualFold(name, "citibike") {
		sets, err := experiment.CitiBike(src.bikeDir, seed)
		if err != nil {
			return nil, "", fmt.Errorf("citibike (the Citi Bike counts are not part of the repository; point --citibike-dir at them): %w", err)
		}
		if !modelsSet {
			models = strings.Join(experiment.CitiBikeModels, ",")
		}
		return sets, models, nil
	}
	ds, err := experiment.Generate(name, seed)
	if err != nil {
		return nil, "", err
	}
	return []*synth.Dataset{ds}, models, nil
}

// salesSets draws the sales splits for src.seeds seeds from src.seed on,
// each named with its seed.
func salesSets(src dataSource) ([]*synth.Dataset, error) {
	var out []*synth.Dataset
	for i := range src.seeds {
		seed := src.seed + uint64(i)
		sets, err := experiment.Sales(src.salesDir, seed)
		if err != nil {
			return nil, fmt.Errorf("sales (the supermarket sales are not part of the repository; point --data at the directory holding daily.csv): %w", err)
		}
		for _, ds := range sets {
			ds.Name = experiment.SalesSeedName(ds, seed)
		}
		out = append(out, sets...)
	}
	return out, nil
}

// writeSalesSummary ends the table with the sales scores' mean ± sd
// over seeds.
func writeSalesSummary(w io.Writer, rows []experiment.Row, models []string) {
	for i := range models {
		models[i] = strings.TrimSpace(models[i])
	}
	s := experiment.Summarise(rows, len(experiment.SalesItems))
	experiment.SortSummaries(s, models)
	fmt.Fprintln(w)
	experiment.WriteSummaries(w, s)
}

// rowWriter writes experiment rows as an aligned table or as CSV.
type rowWriter struct {
	stdout io.Writer
	csv    *csv.Writer // nil for the table
}

// newRowWriter writes the header of format (table or csv).
func newRowWriter(stdout io.Writer, format string) (*rowWriter, error) {
	switch format {
	case "csv":
		w := csv.NewWriter(stdout)
		_ = w.Write([]string{"dataset", "model", "split", "nlpd", "rmse", "r2", "rmse_funct", "seconds", "iterations", "status", "peak_mb"})
		return &rowWriter{stdout: stdout, csv: w}, nil
	case "table":
		fmt.Fprintf(stdout, "%-14s %-9s %-5s %8s %7s %7s %10s %8s %5s %-22s %8s\n", "dataset", "model", "split", "nlpd", "rmse", "r2", "rmse_funct", "seconds", "iter", "status", "peak_mb")
		return &rowWriter{stdout: stdout}, nil
	}
	return nil, fmt.Errorf("--format %q: want table or csv", format)
}

// write writes one row (flushed at once, so a long run shows progress).
func (w *rowWriter) write(r experiment.Row) {
	if w.csv == nil {
		fmt.Fprintf(w.stdout, "%-14s %-9s %-5s %8.3f %7.3f %7.3f %10.3f %8.2f %5d %-22s %8.1f\n", r.Dataset, r.Model, r.Split, r.NLPD, r.RMSE, r.R2, r.RMSEFunct, r.Seconds, r.Iterations, r.Status, r.PeakMB)
		return
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	_ = w.csv.Write([]string{r.Dataset, r.Model, r.Split, f(r.NLPD), f(r.RMSE), f(r.R2), f(r.RMSEFunct), strconv.FormatFloat(r.Seconds, 'f', 3, 64),
		strconv.Itoa(r.Iterations), r.Status, strconv.FormatFloat(r.PeakMB, 'f', 1, 64)})
	w.csv.Flush()
}

// close flushes the CSV and returns its first write error.
func (w *rowWriter) close() error {
	if w.csv == nil {
		return nil
	}
	w.csv.Flush()
	return w.csv.Error()
}
