package test

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/dcgpd/dcgpd/internal/app/experiment"
)

// paperDCGPfTestRMSE is the paper's published DCGP-f test RMSE per
// dataset (ST-2 with the 2-step model, as the data were generated with two
// diffusion steps), and paperOracleTestRMSE the Oracle's (same for ST-1
// and ST-2).
var (
	paperDCGPfTestRMSE  = map[string]float64{"A": 0.108, "B": 0.107, "C": 0.107, "ST1": 0.268, "ST2": 0.269}
	paperOracleTestRMSE = map[string]float64{"A": 0.099, "B": 0.103, "C": 0.104, "ST1": 0.273, "ST2": 0.273}
)

// TestPaperReproduction regenerates each synthetic dataset with the
// paper's protocol and checks the paper's claims on the test split: the
// diffusion-aware model (DCGP-f) beats the censored model (CGP), which
// beats the non-censored model (NCGP), in RMSE against the true demand;
// and DCGP-f's test RMSE is within 10% of the paper's. The data are a new
// draw of the same procedure (bit-exact numpy streams are not
// reproducible in Go), so the comparison is statistical: for A, B and C
// the draws are alike (our Oracle is within 5% of the paper's) and the
// RMSE is compared directly; the ST series are single GP draws whose
// difficulty varies (our ST Oracle reaches 0.236 against the paper's
// 0.273), so there DCGP-f's RMSE relative to the Oracle's is compared with
// the paper's ratio. The spatio-temporal datasets take minutes and run
// only with DCGPD_PAPER_ST=1.
func TestPaperReproduction(t *testing.T) {
	t.Parallel()
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
			st := name == "ST1" || name == "ST2"
			models := []string{"NCGP", "CGP", "DCGP-f"}
			if st {
				models = append(models, "Oracle")
			}
			rmse := map[string]float64{}
			for _, m := range models {
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
			got, want := rmse["DCGP-f"], paperDCGPfTestRMSE[name]
			if st {
				got, want = got/rmse["Oracle"], want/paperOracleTestRMSE[name]
			}
			if d := math.Abs(got-want) / want; d > 0.10 {
				t.Errorf("DCGP-f test RMSE %.4f (ST: relative to the Oracle) is %.0f%% from the paper's %.3f", got, 100*d, want)
			}
		})
	}
}
