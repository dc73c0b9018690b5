package experiment

import (
	"context"
	"testing"
)

func TestDatasetAQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("fits five models")
	}
	ds, err := Generate("A", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Models {
		rows, _, err := Score(context.Background(), ds, m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			t.Logf("%-6s %-5s nlpd %7.3f rmse %.3f r2 %.3f rmsef %.3f  %.2fs it %d", r.Model, r.Split, r.NLPD, r.RMSE, r.R2, r.RMSEFunct, r.Seconds, r.Iterations)
		}
	}
}
