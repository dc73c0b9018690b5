package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dcgpd/dcgpd/internal/app/synth"
)

func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "sim", "directory for obs.csv, products.csv and truth.csv")
	seed := fs.Uint64("seed", 1, "seed")
	hubs := fs.Int("hubs", 6, "number of hubs")
	days := fs.Int("days", 28, "days of hourly data")
	spacing := fs.Float64("spacing", 0, "lay out a city: metres of spacing per hub (the area grows with --hubs); 0: one 800 m disc")
	city := fs.Bool("city", false, "lay out a city with hubs about 300 m apart (--spacing 300)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *city && *spacing == 0 {
		*spacing = citySpacingM
	}
	if !(*spacing >= 0) || math.IsInf(*spacing, 0) {
		return fmt.Errorf("simulate: --spacing %v must be finite and >= 0", *spacing)
	}
	ds, err := simulateLayout(*seed, *hubs, *days, *spacing)
	if err != nil {
		return err
	}
	if err := writeCluster(*dir, ds); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d hubs × %d hours to %s (obs.csv, products.csv, truth.csv)\n", len(ds.Products), len(ds.Train.Times)+len(ds.Test.Times), *dir)
	if *spacing > 0 {
		fmt.Fprintf(stdout, "a city: products.csv holds x, y in metres; model it as one graph with a sparse neighbourhood (neighbours = 8)\n")
	}
	return nil
}

// citySpacingM is --city's spacing: about a bike-share city's hub density.
const citySpacingM = 300

// simulateLayout draws a bike-share cluster, or a city of hubs with
// spacingM > 0.
func simulateLayout(seed uint64, hubs, days int, spacingM float64) (*synth.Dataset, error) {
	cfg := synth.DefaultClusterConfig()
	cfg.Hubs, cfg.Days, cfg.SpacingM = hubs, days, spacingM
	return synth.Cluster(seed, cfg)
}

// writeCluster writes a simulated cluster in the batch CSV formats: the
// training hours with observations, the held-out hours with empty demand.
func writeCluster(dir string, ds *synth.Dataset) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeClusterFiles(func(name string) (outFile, error) { return os.Create(filepath.Join(dir, name)) }, ds)
}

// outFile is a file simulate writes.
type outFile interface {
	io.Writer
	Sync() error
	Close() error
}

// csvOut is one output file behind a buffer: a write error sticks in the
// buffer and comes out of finish, named by the file.
type csvOut struct {
	name string
	f    outFile
	w    *bufio.Writer
}

// finish flushes, syncs and closes the file, reporting the first error.
func (o *csvOut) finish() error {
	err := o.w.Flush()
	if err == nil {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("simulate: writing %s: %w", o.name, err)
	}
	return nil
}

// writeClusterFiles writes products.csv, obs.csv and truth.csv through
// create; any write, sync or close error fails it.
func writeClusterFiles(create func(name string) (outFile, error), ds *synth.Dataset) (err error) {
	var outs []*csvOut
	defer func() {
		for _, o := range outs {
			if ferr := o.finish(); err == nil {
				err = ferr
			}
		}
	}()
	open := func(name string) (*bufio.Writer, error) {
		f, err := create(name)
		if err != nil {
			return nil, err
		}
		o := &csvOut{name: name, f: f, w: bufio.NewWriter(f)}
		outs = append(outs, o)
		return o.w, nil
	}
	pf, err := open("products.csv")
	if err != nil {
		return err
	}
	fmt.Fprintln(pf, "product,x,y")
	for i, p := range ds.Products {
		fmt.Fprintf(pf, "%s,%g,%g\n", p, ds.Features[i][0], ds.Features[i][1])
	}
	of, err := open("obs.csv")
	if err != nil {
		return err
	}
	tf, err := open("truth.csv")
	if err != nil {
		return err
	}
	fmt.Fprintln(of, "time,product,demand,supply,censored")
	fmt.Fprintln(tf, "time,product,true_demand,rate")
	num := func(v float64) string {
		if math.IsInf(v, 1) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	type row struct {
		t     float64
		split *synth.Split
		i     int
		train bool
	}
	var rows []row
	a, b := 0, 0
	for a < len(ds.Train.Times) || b < len(ds.Test.Times) {
		if b >= len(ds.Test.Times) || (a < len(ds.Train.Times) && ds.Train.Times[a] < ds.Test.Times[b]) {
			rows = append(rows, row{ds.Train.Times[a], &ds.Train, a, true})
			a++
		} else {
			rows = append(rows, row{ds.Test.Times[b], &ds.Test, b, false})
			b++
		}
	}
	for _, r := range rows {
		for k, p := range ds.Products {
			demand, cens := "", 0
			if r.train {
				demand = num(r.split.Obs[r.i][k])
				if r.split.Saturated[r.i][k] {
					cens = 1
				}
			}
			fmt.Fprintf(of, "%g,%s,%s,%s,%d\n", r.t, p, demand, num(r.split.Supply[r.i][k]), cens)
			fmt.Fprintf(tf, "%g,%s,%s,%s\n", r.t, p, num(r.split.TrueY[r.i][k]), num(r.split.TrueF[r.i][k]))
		}
	}
	return nil
}
