package experiment

import (
	"math"
	"testing"

	"github.com/dcgpd/dcgpd/cvi/spec"
)

// TestSpecsBuild: every model of every dataset builds, with the paper's
// fixed and learned parameters, and sees the right data.
func TestSpecsBuild(t *testing.T) {
	for _, name := range Datasets {
		ds, err := Generate(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range Models {
			s, err := Spec(ds, m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			data := TrainingData(ds, m)
			if err := data.Validate(); err != nil {
				t.Fatalf("%s/%s: %v", name, m, err)
			}
			b, err := s.Build(spec.Summarise(data, ds.Features, false), "")
			if err != nil {
				t.Fatalf("%s/%s: %v", name, m, err)
			}
			learnDiff := !b.Fixed["likelihood.lengthscale"]
			if (m == "DCGP-l") != (learnDiff && (m == "DCGP-f" || m == "DCGP-l")) {
				t.Errorf("%s/%s: diffusion lengthscale learned = %v", name, m, learnDiff)
			}
			var cens int
			for _, o := range data.Obs {
				if o.Censored {
					cens++
				}
				if m == "Oracle" && !math.IsInf(o.Supply, 1) {
					t.Fatalf("%s: the Oracle must see no supply", name)
				}
			}
			if (m == "CGP" || m == "DCGP-f") && cens == 0 {
				t.Errorf("%s/%s: no censored observations", name, m)
			}
			if (m == "Oracle" || m == "NCGP") && cens != 0 {
				t.Errorf("%s/%s: %d censored observations", name, m, cens)
			}
		}
	}
}
