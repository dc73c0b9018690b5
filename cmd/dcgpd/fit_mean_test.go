package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/csvio"
)

// TestFitSaveModelWithMean: `fit --save-model` of a model with an
// estimated prior mean writes its values, one row per product, which load
// back bit for bit; the posterior CSV carries m (its means average near
// the data's, not near 0); `fit --config` with the saved file keeps the
// values and gives back the posterior within 2% relative.
func TestFitSaveModelWithMean(t *testing.T) {
	dir := t.TempDir()
	obsPath, prodPath := writeSaveModelData(t, dir)
	cfg := filepath.Join(dir, "model.toml")
	if err := os.WriteFile(cfg, []byte("[model]\nlikelihood = \"diffusion\"\n[[model.temporal]]\nkernel = \"matern32\"\n[model.diffusion]\nsink = 0.1\n[model.mean]\nkind = \"periodic\"\nperiod = 24.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(dir, "fitted.model.toml")
	first, second := filepath.Join(dir, "first.csv"), filepath.Join(dir, "second.csv")
	if err := runFit(context.Background(), []string{"--obs", obsPath, "--products", prodPath, "--config", cfg, "--out", first, "--save-model", saved}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[model.mean]", "estimate = false", "step = 1.0", "[model.mean.values]", "\"a\" = [", "\"c\" = ["} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("model file lacks %q:\n%s", want, text)
		}
	}
	sp, err := spec.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := readObs(obsPath)
	if err != nil {
		t.Fatal(err)
	}
	prods, err := readProducts(prodPath, obs)
	if err != nil {
		t.Fatal(err)
	}
	grid, err := csvio.Build(obs, prods)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fitGrid(context.Background(), grid.Data, prods, sp, "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := spec.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := loaded.Build(res.sum, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.built.Mean == nil || nb.Mean == nil || nb.Mean.Cells != 24 {
		t.Fatalf("profiles: fitted %+v, loaded %+v", res.built.Mean, nb.Mean)
	}
	for k := range res.built.Mean.M {
		for c, v := range res.built.Mean.M[k] {
			if math.Float64bits(v) != math.Float64bits(nb.Mean.M[k][c]) {
				t.Fatalf("product %d cell %d: fitted %v, loaded %v", k, c, v, nb.Mean.M[k][c])
			}
		}
	}
	a := readMeans(t, first)
	var post, data float64
	for i, r := range obs.Rows {
		post += a[i]
		data += r.Demand
	}
	post, data = post/float64(len(a)), data/float64(len(a))
	if math.Abs(post-data) > 1.5 {
		t.Errorf("posterior means average %.3f, the data %.3f: the prior mean is not added back", post, data)
	}
	if err := runFit(context.Background(), []string{"--obs", obsPath, "--products", prodPath, "--config", saved, "--out", second}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	b := readMeans(t, second)
	worst := 0.0
	for i := range a {
		worst = math.Max(worst, math.Abs(b[i]-a[i])/math.Max(math.Abs(a[i]), 1))
	}
	if worst > 0.02 {
		t.Errorf("posterior means differ by up to %.3g relative", worst)
	}
}
