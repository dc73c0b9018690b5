package test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/internal/app/synth"
)

// citibikeDir is where the real Citi Bike counts live in the shared tree;
// they are never copied into the repository (their origin keeps them out).
const citibikeDir = "../../shared/data/citibike"

// TestLongCitiBikeDCGPBeatsCGP runs `dcgpd fit` on real hourly pickups of the
// paper's 4-hub cluster (June–July 2018) with supply and censoring
// simulated as in the paper's bike appendix, and
// checks that the diffusion-aware model recovers the true pickups of the
// training hours better than the censored model.
func TestLongCitiBikeDCGPBeatsCGP(t *testing.T) {
	requireLongMode(t)
	skipWithoutCitiBike(t)
	ds := paperBikeDataset(t)
	t.Logf("hubs %v, censored fraction of training hours %v", ds.Products, ds.Train.CensoredFraction())
	dir := t.TempDir()
	obs, err := os.Create(filepath.Join(dir, "obs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(obs, "time,product,demand,supply,censored")
	tr := &ds.Train
	for n, tt := range tr.Times {
		for k, p := range ds.Products {
			c := 0
			if tr.Saturated[n][k] {
				c = 1
			}
			fmt.Fprintf(obs, "%g,%s,%g,%g,%d\n", tt, p, tr.Obs[n][k], tr.Supply[n][k], c)
		}
	}
	obs.Close()
	prods := "product,x,y\n"
	for k, p := range ds.Products {
		prods += fmt.Sprintf("%s,%g,%g\n", p, ds.Features[k][0], ds.Features[k][1])
	}
	config := `[model]
noise_variance = 4.0
[[model.temporal]]
kernel = "matern32"
lengthscale = 3.0
[[model.temporal]]
kernel = "periodic"
period = 24.0
harmonics = 3
[model.diffusion]
lengthscale = 100.0
[fit]
tolerance = 1e-5
`
	for name, body := range map[string]string{"products.csv": prods, "model.toml": config} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rmse := map[string]float64{}
	for _, lik := range []string{"tobit", "diffusion"} {
		out := filepath.Join(dir, lik+".csv")
		code, _, stderr := runCLI(t, "fit", "--obs", filepath.Join(dir, "obs.csv"), "--products", filepath.Join(dir, "products.csv"),
			"--config", filepath.Join(dir, "model.toml"), "--likelihood", lik, "--out", out)
		if code != 0 {
			t.Fatalf("fit %s: exit %d\n%s", lik, code, stderr)
		}
		t.Logf("%s summary:\n%s", lik, tailLines(stderr, 14))
		post := readCSV(t, out)
		var s float64
		i := 1
		for n := range tr.Times {
			for k := range ds.Products {
				m, err := strconv.ParseFloat(post[i][2], 64)
				if err != nil {
					t.Fatal(err)
				}
				e := m - tr.TrueY[n][k]
				s += e * e
				i++
			}
		}
		rmse[lik] = math.Sqrt(s / float64(len(tr.Times)*len(ds.Products)))
	}
	t.Logf("in-sample RMSE against true pickups: CGP %.3f, DCGP %.3f (paper, 4 hubs: CGP 4.197, DCGP-f 2.983)", rmse["tobit"], rmse["diffusion"])
	if !(rmse["diffusion"] < rmse["tobit"]) {
		t.Errorf("DCGP in-sample RMSE %.3f is not below CGP's %.3f", rmse["diffusion"], rmse["tobit"])
	}
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// paperBikeDataset builds the paper's 4-hub Citi Bike cluster (June–July
// 2018) with supply and censoring simulated as its bike appendix does.
func paperBikeDataset(t *testing.T) *synth.Dataset {
	t.Helper()
	q, err := synth.PaperBikeQuery(4)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := synth.ReadCitiBike(citibikeDir, q)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := synth.PaperBikeConfig(4, 123)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := synth.Bike(counts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}
