package test

import (
	"context"
	"testing"

	"github.com/dcgpd/dcgpd/internal/app/experiment"
)

// BenchmarkFitPaper times one full fit to convergence (one op) of the
// paper's models on its synthetic datasets: data generation is outside the
// timed region, learning of all hyperparameters and the final smoothing
// inside. Sub-benchmarks are dataset/model, e.g. A/DCGP-f, ST1/DCGP-f.
func BenchmarkFitPaper(b *testing.B) {
	for _, name := range experiment.Datasets {
		ds, err := experiment.Generate(name, 123)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range experiment.Models {
			b.Run(name+"/"+m, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := experiment.Fit(context.Background(), ds, m, experiment.Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
