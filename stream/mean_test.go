package stream

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/cvi/spec"
)

// TestRunnerRefusesMeanWithoutValues: the daemon does not estimate a
// prior mean; a model that asks for one without its values, or whose
// values miss a product and have no row to pool (pooled_test.go has the
// pooled prior), is refused at start with an error naming it.
func TestRunnerRefusesMeanWithoutValues(t *testing.T) {
	c, m := restoreConfig(false)
	m.Model.Mean = spec.Mean{Kind: "periodic"}
	if _, err := NewRunner(c, m, newMemSink(), zerolog.Nop(), NewMetrics(nil)); err == nil || !strings.Contains(err.Error(), "model.mean") {
		t.Errorf("no values: err %v", err)
	}
	m = withMean(c, m)
	delete(m.Model.Mean.Values, "p2")
	for name, row := range m.Model.Mean.Values {
		m.Model.Mean.Values[name] = make([]float64, len(row))
	}
	if _, err := NewRunner(c, m, newMemSink(), zerolog.Nop(), NewMetrics(nil)); err == nil || !strings.Contains(err.Error(), `"p2"`) {
		t.Errorf("a product without values: err %v", err)
	}
}
