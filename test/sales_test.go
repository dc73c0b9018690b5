package test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/internal/app/experiment"
	"github.com/dcgpd/dcgpd/internal/app/synth"
)

// salesDir is the shared supermarket-sales directory seen from test/.
var salesDir = filepath.Join("..", experiment.SalesDir)

// skipWithoutSales skips when the shared sales data is absent.
func skipWithoutSales(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(filepath.Join(salesDir, synth.SalesFile)); err != nil {
		tb.Skipf("SKIPPED: the supermarket sales are not here (%v); they live in ../shared, which a fresh clone does not have", err)
	}
}

// TestLongSalesExperiment runs `dcgpd experiment --dataset sales`'s protocol
// on the real sales and asserts the paper's ordering of test RMSE, DCGP-f
// below CGP below NCGP, with finite scores. By default the 90/10 split of
// seed 123 with NCGP, CGP and DCGP-f (a few seconds), every fit
// converged; DCGPD_SALES=1 runs the table of docs/sales.md: all three
// splits, seeds 123–127, all five models, asserting the ordering of the
// means over seeds on every split (439 s on a shared 2-core machine:
// go test -timeout 30m).
func TestLongSalesExperiment(t *testing.T) {
	requireLongMode(t)
	skipWithoutSales(t)
	full := os.Getenv("DCGPD_SALES") != ""
	models, seeds := []string{"NCGP", "CGP", "DCGP-f"}, 1
	if full {
		models, seeds = experiment.SalesModels, 5
	}
	var rows []experiment.Row
	for i := range seeds {
		seed := uint64(123 + i)
		sets, err := experiment.Sales(salesDir, seed)
		if err != nil {
			t.Fatal(err)
		}
		if !full {
			sets = sets[:1] // 90/10
		}
		for _, ds := range sets {
			ds.Name = experiment.SalesSeedName(ds, seed)
			for _, m := range models {
				r, f, err := experiment.Score(context.Background(), ds, m, experiment.Options{})
				if err != nil {
					t.Fatalf("%s on %s: %v", m, ds.Name, err)
				}
				switch {
				case f.Result.Converged:
				case full:
					// Some DCGP fits of other seeds stop with a failed line
					// search near the optimum (docs/sales.md): logged, and
					// their scores kept, as the table keeps them.
					t.Logf("%s on %s: %s (%s)", m, ds.Name, f.Result.Status, f.Result.Detail)
				default:
					t.Errorf("%s on %s: %s (%s)", m, ds.Name, f.Result.Status, f.Result.Detail)
				}
				for _, x := range r {
					if math.IsNaN(x.NLPD) || math.IsInf(x.NLPD, 0) || math.IsNaN(x.RMSE) {
						t.Errorf("%s on %s %s: NLPD %v RMSE %v", m, ds.Name, x.Split, x.NLPD, x.RMSE)
					}
				}
				rows = append(rows, r...)
			}
		}
	}
	sum := experiment.Summarise(rows, len(experiment.SalesItems))
	experiment.SortSummaries(sum, models)
	var buf bytes.Buffer
	experiment.WriteSummaries(&buf, sum)
	t.Logf("sales scores (mean ± sd over %d seed(s)):\n%s", seeds, buf.String())
	rmse := map[string]float64{}
	for _, s := range sum {
		rmse[s.Dataset+"/"+s.Split+"/"+s.Model] = s.RMSE[0]
	}
	for _, ds := range []string{"sales-9010", "sales-7030", "sales-5050"} {
		k := ds + "/test/"
		if _, ok := rmse[k+"CGP"]; !ok {
			continue
		}
		if !(rmse[k+"DCGP-f"] < rmse[k+"CGP"] && rmse[k+"CGP"] < rmse[k+"NCGP"]) {
			t.Errorf("%s test RMSE: DCGP-f %.3f, CGP %.3f, NCGP %.3f; want DCGP-f < CGP < NCGP", ds, rmse[k+"DCGP-f"], rmse[k+"CGP"], rmse[k+"NCGP"])
		}
	}
}

// TestSalesNoData: without the data the experiment fails with a message
// saying where the data should be, and does not crash.
func TestSalesNoData(t *testing.T) {
	code, _, stderr := runCLI(t, "experiment", "--dataset", "sales", "--data", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "--data") || !strings.Contains(stderr, "not found") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestRetailExample: examples/retail is what synth.RetailExample writes
// (DCGPD_WRITE_RETAIL=1 rewrites it), and its one-command fit recovers
// the true demand better with the diffusion likelihood than with the
// Tobit, and with the Tobit better than with the Gaussian, on the
// observed and on the held-out days.
func TestRetailExample(t *testing.T) {
	dir := filepath.Join("..", "examples", "retail")
	r, err := synth.RetailExample(synth.RetailSeed)
	if err != nil {
		t.Fatal(err)
	}
	var obs, prod, truth bytes.Buffer
	if err := r.WriteCSV(&obs, &prod, &truth); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"obs.csv": obs.Bytes(), "products.csv": prod.Bytes(), "truth.csv": truth.Bytes()}
	for name, want := range files {
		path := filepath.Join(dir, name)
		if os.Getenv("DCGPD_WRITE_RETAIL") != "" {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what synth.RetailExample(%d) writes (DCGPD_WRITE_RETAIL=1 rewrites it)", path, synth.RetailSeed)
		}
	}
	var obsRMSE, heldRMSE []float64
	var report []string
	for _, lik := range []string{"diffusion", "tobit", "gaussian"} {
		code, post, stderr := runCLI(t, "fit", "--obs", filepath.Join(dir, "obs.csv"), "--products", filepath.Join(dir, "products.csv"),
			"--config", filepath.Join(dir, "model.toml"), "--likelihood", lik, "--quiet")
		if code != 0 {
			t.Fatalf("fit --likelihood %s: exit %d\n%s", lik, code, stderr)
		}
		o, h := exampleRMSE(t, dir, post)
		obsRMSE, heldRMSE = append(obsRMSE, o), append(heldRMSE, h)
		report = append(report, fmt.Sprintf("%s %.3f / %.3f", lik, o, h))
	}
	t.Logf("retail RMSE against the true demand, observed / held-out days: %s", strings.Join(report, ", "))
	for _, v := range [][]float64{obsRMSE, heldRMSE} {
		if !(v[0] < v[1] && v[1] < v[2]) {
			t.Errorf("retail RMSE diffusion %.3f, tobit %.3f, gaussian %.3f: want increasing", v[0], v[1], v[2])
		}
	}
}
