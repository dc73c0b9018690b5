package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateCity: --city lays out hundreds of hubs (the fixed disc
// refuses them) and writes one products.csv row per hub; a negative
// --spacing is refused.
func TestSimulateCity(t *testing.T) {
	dir := t.TempDir()
	var out, errs bytes.Buffer
	ctx := context.Background()
	if err := runSimulate(ctx, []string{"--hubs", "300", "--days", "1", "--dir", dir}, &out, &errs); err == nil {
		t.Fatal("300 hubs fit the fixed disc")
	}
	if err := runSimulate(ctx, []string{"--hubs", "300", "--days", "1", "--city", "--dir", dir}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "products.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 301 {
		t.Fatalf("products.csv has %d rows, want a header and 300 hubs", len(rows))
	}
	if !strings.Contains(out.String(), "wrote 300 hubs") {
		t.Fatalf("output %q", out.String())
	}
	if err := runSimulate(ctx, []string{"--hubs", "30", "--spacing", "-1", "--dir", dir}, &out, &errs); err == nil {
		t.Fatal("negative spacing accepted")
	}
}
