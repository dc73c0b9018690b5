package stream

import (
	"testing"

	"github.com/rs/zerolog"
)

// TestStatusLearnedMeansRelearned: the status marks a parameter learned
// only when this daemon re-learns it: resmooth.relearn on (with its
// re-smoothing schedule) and the parameter not held fixed; with relearn
// off, none is, whatever [fit] learn says.
func TestStatusLearnedMeansRelearned(t *testing.T) {
	for _, relearn := range []bool{false, true} {
		c, m := restoreConfig(relearn)
		m.Model.Temporal[0].FixedParams = []string{"lengthscale"}
		c.Models[0] = m
		r, err := NewRunner(c, m, newMemSink(), zerolog.Nop(), NewMetrics(nil))
		if err != nil {
			t.Fatal(err)
		}
		r.publishView(nil)
		params := r.View().Status.Parameters
		if len(params) == 0 {
			t.Fatal("no parameters in the status")
		}
		for _, p := range params {
			// The lengthscale is held by fixed_params, the diffusion's
			// lengthscale and sink by diffusion.learn (off by default).
			want := relearn && (p.Name == "temporal.variance" || p.Name == "likelihood.variance")
			if p.Learned != want {
				t.Errorf("relearn %v: %s learned %v, want %v", relearn, p.Name, p.Learned, want)
			}
		}
	}
}
