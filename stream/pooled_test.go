package stream

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
)

// pooledMean is a [model.mean] fitted on product "a" only.
const pooledMean = `[model.mean]
kind = "periodic"
period = 2.0
step = 1.0
estimate = false
level = "scale"
[model.mean.values]
a = [1.0, 3.0]
`

// TestRunnerPooledPrior: a model file fitted on "a" serves "a" and "b":
// b gets the pooled prior at its nearest fitted neighbour's level, with
// one log line saying so; with no row to pool the runner is refused
// naming the model file and the line of its values.
func TestRunnerPooledPrior(t *testing.T) {
	model := strings.Replace(hubsModel, "[fit]", pooledMean+"[fit]", 1)
	for _, tc := range []struct {
		name, model, wantErr string
	}{
		{"pooled", model, ""},
		{"nothing to pool", strings.Replace(model, "a = [1.0, 3.0]", "a = [0.0, 0.0]", 1), "hubs.model.toml: line 24: model: model.mean.values: no fitted row to pool for product \"b\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.LoadConfig(writeModelFile(t, modelFileConfig, tc.model))
			if err != nil {
				t.Fatal(err)
			}
			c.Snapshot.Dir = "off"
			var logs bytes.Buffer
			r, err := NewRunner(&c, c.Models[0], newMemSink(), zerolog.New(&logs), NewMetrics(nil))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.built.Mean.M; len(got) != 2 || got[1][0] != 1 || got[1][1] != 3 {
				t.Errorf("profile %v, want b at a's [1 3]", got)
			}
			var lines []map[string]any
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["pooled"] != nil {
					lines = append(lines, m)
				}
			}
			if len(lines) != 1 || lines[0]["pooled"] != 1.0 || lines[0]["by_neighbours"] != 1.0 || lines[0]["model_file"] != "hubs.model.toml" ||
				!strings.Contains(lines[0]["message"].(string), "1 products without a row") {
				t.Errorf("pooling log lines %v, want one", lines)
			}
		})
	}
}
