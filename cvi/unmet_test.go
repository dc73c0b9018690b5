package cvi

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/diffusion"
)

// TestExcessMomentsMonteCarlo checks the closed form against 2·10⁶ draws
// (fixed seed): the mean within 4 standard errors, the variance within 2%.
func TestExcessMomentsMonteCarlo(t *testing.T) {
	cases := []struct{ m, v, u float64 }{
		{2, 1, 1}, {0.3, 0.2, 0}, {-1, 4, 1}, {5, 0.01, 5}, {1, 9, 6},
	}
	rng := rand.New(rand.NewPCG(7, 11))
	const n = 2_000_000
	for _, c := range cases {
		mean, variance := ExcessMoments(c.m, c.v, c.u)
		var s1, s2 float64
		for i := 0; i < n; i++ {
			e := math.Max(c.m+math.Sqrt(c.v)*rng.NormFloat64()-c.u, 0)
			s1 += e
			s2 += e * e
		}
		mcMean := s1 / n
		mcVar := s2/n - mcMean*mcMean
		se := math.Sqrt(mcVar / n)
		if math.Abs(mean-mcMean) > 4*se+1e-12 {
			t.Errorf("m %v v %v u %v: mean %v, Monte Carlo %v ± %v", c.m, c.v, c.u, mean, mcMean, se)
		}
		if math.Abs(variance-mcVar) > 0.02*mcVar+1e-12 {
			t.Errorf("m %v v %v u %v: variance %v, Monte Carlo %v", c.m, c.v, c.u, variance, mcVar)
		}
	}
	if m, v := ExcessMoments(3, 0, 1); m != 2 || v != 0 {
		t.Errorf("v = 0: got %v, %v, want 2, 0", m, v)
	}
	if m, v := ExcessMoments(3, 1, math.Inf(1)); m != 0 || v != 0 {
		t.Errorf("unlimited supply: got %v, %v, want 0, 0", m, v)
	}
}

// TestUnmetDemandMonteCarlo draws the latent demand of four products,
// sends each censored product's excess over T's row and to the sink, and
// compares the mean flows with UnmetDemand's (4 standard errors).
func TestUnmetDemandMonteCarlo(t *testing.T) {
	feats := [][]float64{{0, 0}, {1, 0}, {0, 2}, {1, 1}}
	tr, err := diffusion.NewTransition(feats, 1.5, 0.3, diffusion.GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A censored product, one with supply to spare, another censored,
	// and one full that served nobody (no observation, supply 0).
	obs := []Obs{{Y: 2, Supply: 2, Censored: true}, {Y: 1, Supply: 3}, {Y: 4, Supply: 4, Censored: true}, {Y: math.NaN(), Supply: 0}}
	dm, dv := []float64{2.6, 1, 4.2, 0.3}, []float64{0.8, 0.5, 1.5, 0.1}
	full := []bool{true, false, true, true}
	dst := make([]Unmet, 4)
	if err := UnmetDemand(tr, obs, dm, dv, dst); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	const n = 1_000_000
	var flow [4][4]float64 // flow[k][j]: from k to j
	var lost, lost2 [4]float64
	for i := 0; i < n; i++ {
		for k, o := range obs {
			if !full[k] {
				continue
			}
			e := math.Max(dm[k]+math.Sqrt(dv[k])*rng.NormFloat64()-o.Supply, 0)
			for j := range obs {
				flow[k][j] += tr.At(k, j) * e
			}
			l := tr.Sink(k) * e
			lost[k] += l
			lost2[k] += l * l
		}
	}
	for k := range obs {
		u := dst[k]
		if !full[k] {
			if u.Mean != 0 || u.Lost != 0 || len(u.To) != 0 {
				t.Errorf("product %d is not censored but turned away %+v", k, u)
			}
			continue
		}
		se := math.Sqrt((lost2[k]/n - (lost[k]/n)*(lost[k]/n)) / n)
		if math.Abs(u.Lost-lost[k]/n) > 4*se {
			t.Errorf("product %d: lost %v, Monte Carlo %v ± %v", k, u.Lost, lost[k]/n, se)
		}
		var sum float64
		for i, j := range u.Dest {
			sum += u.To[i]
			want := flow[k][j] / n
			if math.Abs(u.To[i]-want) > 4*se/tr.Sink(k)*tr.At(k, j)+1e-12 {
				t.Errorf("product %d to %d: %v, Monte Carlo %v", k, j, u.To[i], want)
			}
		}
		if math.Abs(sum+u.Lost-u.Mean) > 1e-12*u.Mean {
			t.Errorf("product %d: flows %v + lost %v != turned away %v", k, sum, u.Lost, u.Mean)
		}
	}
}
