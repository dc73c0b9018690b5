package backtest

import (
	"errors"
	"math"
	"testing"

	"github.com/dcgpd/dcgpd/cvi/spec"
)

// TestWithParametersRoundTrip: a model rebuilt from the values
// WithParameters writes has exactly the parameters it was given, for the
// shipped bike-share model and the bike-share example, each parameter
// first moved off its configured start.
func TestWithParametersRoundTrip(t *testing.T) {
	feats := [][]float64{{0, 0}, {300, 0}, {0, 300}}
	sum := spec.Summary{Variance: 7, MedianStep: 1, Features: feats, NP: 3}
	for _, path := range []string{"../../../examples/citibike-hourly/model.toml", "../../../examples/bikeshare/model.toml"} {
		sp, err := spec.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sp.Build(sum, "")
		if err != nil {
			t.Fatal(err)
		}
		ps := b.Parameters()
		for i := range ps {
			if ps[i].Name != "likelihood.sink" {
				ps[i].Value *= 1.37
			}
		}
		m, err := WithParameters(sp.Model, ps)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := spec.Spec{Model: m}.Build(spec.Summary{Variance: 1, MedianStep: 1, Features: feats, NP: 3}, "")
		if err != nil {
			t.Fatal(err)
		}
		got := b2.Parameters()
		if len(got) != len(ps) {
			t.Fatalf("%s: %d parameters, want %d", path, len(got), len(ps))
		}
		for i := range ps {
			if got[i].Name != ps[i].Name || math.Abs(got[i].Value-ps[i].Value) > 1e-9*math.Abs(ps[i].Value) {
				t.Errorf("%s: %s = %v, want %v", path, got[i].Name, got[i].Value, ps[i].Value)
			}
		}
	}
	if _, err := WithParameters(spec.Model{}, []spec.Parameter{{Name: "product.nonsense", Value: 1}}); !errors.Is(err, ErrParameter) {
		t.Errorf("an unknown parameter gave %v, want ErrParameter", err)
	}
}
