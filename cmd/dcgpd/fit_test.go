package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestFitCountPosterior fits Poisson and censored Poisson likelihoods to
// seeded Poisson counts with a constant rate per product and checks the
// POSTERIOR columns describe the demand rate: per product, the average
// posterior rate mean is within 5% of the product's data mean (measured:
// within 0.2%; the fitted log-rate's mean alone, −0.05 here for a rate
// of 1.1, is what the columns held before), the quantiles
// bracket the mean, and log_rate_mean/log_rate_var reproduce the rate's
// columns through the lognormal moments.
func TestFitCountPosterior(t *testing.T) {
	rates := map[string]float64{"one": 1, "four": 4, "twelve": 12}
	products := []string{"one", "four", "twelve"}
	rng := rand.New(rand.NewPCG(9, 9))
	var obs bytes.Buffer
	obs.WriteString("time,product,demand,supply,censored\n")
	sum := map[string]float64{}
	const hours = 168
	for h := 0; h < hours; h++ {
		for _, p := range products {
			y := poisson(rng, rates[p])
			sum[p] += y
			fmt.Fprintf(&obs, "%d,%s,%g,,0\n", h, p, y)
		}
	}
	dir := t.TempDir()
	obsPath := filepath.Join(dir, "obs.csv")
	if err := os.WriteFile(obsPath, obs.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, lik := range []string{"poisson", "censored-poisson"} {
		t.Run(lik, func(t *testing.T) {
			out := filepath.Join(dir, lik+".csv")
			if err := runFit(context.Background(), []string{"--obs", obsPath, "--likelihood", lik, "--out", out, "--quiet"}, io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			recs, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"time", "product", "mean", "var", "pred_var", "q05", "q95", "log_rate_mean", "log_rate_var"}
			if fmt.Sprint(recs[0]) != fmt.Sprint(want) {
				t.Fatalf("header %v, want %v", recs[0], want)
			}
			if len(recs) != 1+hours*len(products) {
				t.Fatalf("%d rows, want %d", len(recs)-1, hours*len(products))
			}
			post := map[string]float64{}
			for _, r := range recs[1:] {
				v := make([]float64, 7)
				for i := range v {
					if v[i], err = strconv.ParseFloat(r[2+i], 64); err != nil {
						t.Fatal(err)
					}
				}
				mean, vr, pv, q05, q95, lm, lv := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
				post[r[1]] += mean
				wantMean := math.Exp(lm + lv/2)
				wantVar := math.Expm1(lv) * math.Exp(2*lm+lv)
				if relDiff(mean, wantMean) > 1e-8 || relDiff(vr, wantVar) > 1e-8 || relDiff(pv, mean+vr) > 1e-8 {
					t.Fatalf("%v: rate columns do not match the log-rate's lognormal moments", r)
				}
				if !(q05 < mean && mean < q95) || relDiff(q05, math.Exp(lm-z95*math.Sqrt(lv))) > 1e-8 {
					t.Fatalf("%v: quantiles do not bracket the mean or are not exp(m ∓ 1.645 sd)", r)
				}
			}
			for _, p := range products {
				got, data := post[p]/hours, sum[p]/hours
				if relDiff(got, data) > 0.05 {
					t.Errorf("%s: posterior rate mean %.3f, data mean %.3f (true %g)", p, got, data, rates[p])
				}
			}
		})
	}
}

func relDiff(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(b), 1e-300) }

// poisson draws a Poisson(λ) count by inversion (λ is small here).
func poisson(rng *rand.Rand, lambda float64) float64 {
	u := rng.Float64()
	p := math.Exp(-lambda)
	c := p
	k := 0
	for u > c {
		k++
		p *= lambda / float64(k)
		c += p
	}
	return float64(k)
}
