package stream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
)

const modelFileConfig = `[nats]
listen = "127.0.0.1:-1"

[[models]]
name = "hubs"
bin = "1h"
model_file = "hubs.model.toml"
[[models.product]]
name = "a"
features = [0.0, 0.0]
[[models.product]]
name = "b"
features = [300.0, 0.0]
`

const hubsModel = `# fitted
[model]
likelihood = "diffusion"
noise_variance = 2.631260918617249
[[model.temporal]]
kernel = "matern32"
variance = 1.5369712037011103
lengthscale = 0.6989261311645316
[[model.temporal]]
kernel = "periodic"
variance = 40.97361157946414
lengthscale = 2.776252091466452
period = 24.0
harmonics = 2
[model.diffusion]
lengthscale = 300.0
sink = 0.1
[fit]
learn = false
`

// writeModelFile writes a daemon configuration and its model file to a
// temporary folder and returns the configuration's path.
func writeModelFile(t *testing.T, cfg, model string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hubs.model.toml"), []byte(model), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "dcgpd.toml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestModelFileLoads: a model_file's tables become the model's, and the
// built model (what the status reply shows) has the file's values.
func TestModelFileLoads(t *testing.T) {
	p := writeModelFile(t, modelFileConfig, hubsModel)
	c, err := config.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Models[0]
	if len(m.Model.Temporal) != 2 || m.Fit.Learn == nil || *m.Fit.Learn {
		t.Fatalf("model file not loaded: %+v", m.Model)
	}
	prods, err := loadProducts(&c, &m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildModel(prods, &m)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"temporal.0.variance": 1.5369712037011103, "temporal.0.lengthscale": 0.6989261311645316,
		"temporal.1.variance": 40.97361157946414, "temporal.1.lengthscale": 2.776252091466452, "temporal.1.period": 24,
		"likelihood.variance": 2.631260918617249, "likelihood.lengthscale": 300, "likelihood.sink": 0.1}
	for _, p := range b.Parameters() {
		if w, ok := want[p.Name]; !ok || p.Value != w {
			t.Errorf("%s = %v, want %v", p.Name, p.Value, w)
		}
	}
}

// TestModelFileErrors: each mistake names the configuration's line of
// model_file and, for a bad model file, the file and its line.
func TestModelFileErrors(t *testing.T) {
	cases := []struct{ name, cfg, model, want string }{
		{"both", modelFileConfig + "[models.model]\nlikelihood = \"tobit\"\n", hubsModel, "dcgpd.toml:7: models[0] (hubs).model_file: give a model file or [models.model], not both"},
		{"fit table too", modelFileConfig + "[models.fit]\nmax_iterations = 3\n", hubsModel, "dcgpd.toml:7: models[0] (hubs).model_file: give a model file or [models.fit], not both"},
		{"missing", strings.Replace(modelFileConfig, "hubs.model.toml", "nope.toml", 1), hubsModel, "dcgpd.toml:7: models[0] (hubs).model_file: config: open "},
		{"unknown key", modelFileConfig, hubsModel + "bogus = 1\n", "dcgpd.toml:7: models[0] (hubs).model_file: "},
		{"bad value", modelFileConfig, strings.Replace(hubsModel, "sink = 0.1", "sink = 1.5", 1), "model.diffusion.sink must be in [0, 1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.LoadConfig(writeModelFile(t, c.cfg, c.model))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
			if c.name == "unknown key" && (err == nil || !strings.Contains(err.Error(), `hubs.model.toml: line 20: unknown key "fit.bogus"`)) {
				t.Errorf("got %v: want the model file's line", err)
			}
		})
	}
}

// TestModelFileNotReadIsRefused: a configuration decoded in memory
// (DecodeConfig) does not read model files; a runner for it refuses to
// start rather than run the default model.
func TestModelFileNotReadIsRefused(t *testing.T) {
	c, err := config.DecodeConfig([]byte(modelFileConfig))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewRunner(&c, c.Models[0], newMemSink(), zerolog.Nop(), NewMetrics(nil))
	if err == nil || !strings.Contains(err.Error(), "model_file \"hubs.model.toml\": not read") {
		t.Errorf("got %v", err)
	}
}
