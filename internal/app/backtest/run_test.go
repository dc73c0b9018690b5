package backtest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
)

// TestRunFillsForecasts: the runner's published estimates and forecasts
// land at their origin and horizon, and a periodic series is forecast
// near its truth (a Gaussian model with given values, re-smoothing on, so
// the race detector sees the runner goroutine, the re-smooth and the
// sink). A forecast filed one horizon off would miss by up to 1.3.
func TestRunFillsForecasts(t *testing.T) {
	const n, from, H = 200, 150, 6
	g := testGrid(n, nil)
	for i := range g.Y {
		v := 10 + 5*math.Sin(2*math.Pi*float64(i)/24)
		g.Y[i][0], g.Truth[i][0] = v, v
	}
	m := config.DefaultModelConfig()
	m.Name, m.Bin, m.Origin, m.Horizon = "t", config.Duration{Duration: time.Hour}, g.Start, H
	m.Resmooth.EveryBins, m.Resmooth.Window = 24, 48
	m.Product = []config.ProductConfig{{Name: "a"}}
	m.Model = spec.Model{Likelihood: "gaussian", NoiseVariance: 0.01, Temporal: []spec.Temporal{
		{Kernel: "matern32", Variance: 1, Lengthscale: 24},
		{Kernel: "periodic", Variance: 25, Lengthscale: 1, Period: 24, Harmonics: 4}}}
	f, err := Run(context.Background(), g, m, RunOptions{From: from, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	for h := 0; h <= H; h++ {
		for o := 0; o+from+h < n; o++ {
			got, want := f.Mean[h][o][0], g.Truth[o+from+h][0]
			if math.IsNaN(got) || math.Abs(got-want) > 0.3 || !(f.PredVar[h][o][0] > 0) {
				t.Fatalf("origin %d h=%d: mean %v var %v, truth %v", o+from, h, got, f.PredVar[h][o][0], want)
			}
		}
	}
	if len(f.Messages) != n-from || len(f.Messages[0]) == 0 {
		t.Fatalf("%d messages kept", len(f.Messages))
	}
}
