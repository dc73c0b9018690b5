package test

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/dcgpd/dcgpd/internal/experiment"
)

// paperDCGPfTestRMSE is the paper's DCGP-f test RMSE per dataset
// (reference-notes §5.5; ST-2 with the 2-step model, as the data were
// generated with two diffusion steps).
var paperDCGPfTestRMSE = map[string]float64{"A": 0.108, "B": 0.107, "C": 0.107, "ST1": 0.268, "ST2": 0.269}

// TestPaperReproduction regenerates each synthetic dataset with the
// paper's protocol and checks the paper's claims on the test split: the
// diffusion-aware model (DCGP-f) beats the censored model (CGP), which
// beats the non-censored model (NCGP), in RMSE against the true demand;
// and DCGP-f's test RMSE is within 10% of the paper's. The data are a new
// draw of the same procedure (bit-exact numpy streams are not
// reproducible in Go), so the comparison is statistical. The
// spatio-temporal datasets take minutes and run only with
// DCGPD_PAPER_ST=1.
func TestPaperReproduction(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: fits three models per dataset")
	}
	for _, name := range experiment.Datasets {
		t.Run(name, func(t *testing.T) {
			if (name == "ST1" || name == "ST2") && os.Getenv("DCGPD_PAPER_ST") == "" {
				t.Skip("SKIPPED: set DCGPD_PAPER_ST=1 to run the spatio-temporal reproduction (minutes)")
			}
			ds, err := experiment.Generate(name, 123)
			if err != nil {
				t.Fatal(err)
			}
			rmse := map[string]float64{}
			for _, m := range []string{"NCGP", "CGP", "DCGP-f"} {
				rows, _, err := experiment.Score(context.Background(), ds, m, experiment.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					if r.Split == "test" {
						rmse[m] = r.RMSE
						t.Logf("%-6s test RMSE %.4f NLPD %.3f R² %.3f (%.1fs)", m, r.RMSE, r.NLPD, r.R2, r.Seconds)
					}
				}
			}
			if !(rmse["DCGP-f"] < rmse["CGP"] && rmse["CGP"] < rmse["NCGP"]) {
				t.Errorf("want DCGP-f < CGP < NCGP in test RMSE, got %v", rmse)
			}
			want := paperDCGPfTestRMSE[name]
			if d := math.Abs(rmse["DCGP-f"]-want) / want; d > 0.10 {
				t.Errorf("DCGP-f test RMSE %.4f is %.0f%% from the paper's %.3f", rmse["DCGP-f"], 100*d, want)
			}
		})
	}
}
