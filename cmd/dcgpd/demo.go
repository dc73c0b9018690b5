package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/synth"
	"github.com/dcgpd/dcgpd/stream/csvio"
)

// runDemo simulates a bike-share cluster whose true demand is known, fits
// it with the plain Gaussian model (NCGP), the censored model (CGP) and the
// diffusion-aware censored model (DCGP), and reports how well each
// recovers the true demand of the hours it saw and of held-out hours.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "seed of the simulated cluster")
	hubs := fs.Int("hubs", 5, "number of hubs")
	days := fs.Int("days", 14, "days of hourly data")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ds, err := simulateCluster(*seed, *hubs, *days)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "simulated %d hubs × %d days; censored fraction per hub: %s\n", len(ds.Products), *days, fmtFracs(ds.Train.CensoredFraction()))
	data, all := demoData(ds)
	prods := &csvio.Products{Names: ds.Products, Features: ds.Features}
	sp := spec.Spec{Model: spec.Model{
		Temporal: []spec.Temporal{
			{Kernel: "matern32", Lengthscale: 24},
			{Kernel: "periodic", Period: 24, Harmonics: 4, Lengthscale: 1},
		},
		Diffusion: spec.Diffusion{Lengthscale: 250, Sink: 0.2},
	}}
	fmt.Fprintf(stdout, "%-10s %12s %12s %8s\n", "model", "train RMSE", "test RMSE", "seconds")
	for _, lik := range []string{"gaussian", "tobit", "diffusion"} {
		res, err := fitGrid(ctx, data, prods, sp, lik, io.Discard)
		if err != nil {
			return fmt.Errorf("%s: %w", lik, err)
		}
		tr, te := demoRMSE(res, all, ds)
		fmt.Fprintf(stdout, "%-10s %12.3f %12.3f %8.2f\n", map[string]string{"gaussian": "NCGP", "tobit": "CGP", "diffusion": "DCGP"}[lik], tr, te, res.elapsed.Seconds())
	}
	return nil
}

func fmtFracs(f []float64) string {
	s := ""
	for i, v := range f {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2f", v)
	}
	return s
}

// demoRow locates a data bin in the dataset's splits.
type demoRow struct {
	split *synth.Split
	i     int
	train bool
}

// demoData merges the cluster's train and test hours into one grid; test
// hours are unobserved.
func demoData(ds *synth.Dataset) (*cvi.Data, []demoRow) {
	np := len(ds.Products)
	d := &cvi.Data{NP: np}
	var rows []demoRow
	a, b := 0, 0
	for a < len(ds.Train.Times) || b < len(ds.Test.Times) {
		var r demoRow
		if b >= len(ds.Test.Times) || (a < len(ds.Train.Times) && ds.Train.Times[a] < ds.Test.Times[b]) {
			r = demoRow{&ds.Train, a, true}
			a++
		} else {
			r = demoRow{&ds.Test, b, false}
			b++
		}
		d.Times = append(d.Times, r.split.Times[r.i])
		for k := 0; k < np; k++ {
			o := cvi.Obs{Y: math.NaN(), Supply: r.split.Supply[r.i][k]}
			if r.train {
				o.Y = r.split.Obs[r.i][k]
				o.Censored = r.split.Saturated[r.i][k]
			}
			d.Obs = append(d.Obs, o)
		}
		rows = append(rows, r)
	}
	return d, rows
}

// demoRMSE scores the posterior mean against the true demand.
func demoRMSE(res *fitResult, rows []demoRow, ds *synth.Dataset) (train, test float64) {
	np := len(ds.Products)
	var s [2]float64
	var n [2]int
	for b, r := range rows {
		j := 1
		if r.train {
			j = 0
		}
		for k := 0; k < np; k++ {
			e := res.post.Mean[b*np+k] - r.split.TrueY[r.i][k]
			s[j] += e * e
			n[j]++
		}
	}
	return math.Sqrt(s[0] / float64(n[0])), math.Sqrt(s[1] / float64(n[1]))
}
