package cvi

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The level noise's variance of an observation, written out independently
// of noise.go: σ² + c·max(level, 0).
func refLevelVariance(s2, c, level float64) float64 { return s2 + c*math.Max(level, 0) }

// refLogLik is log p(y | f) of the Gaussian (censored = false) or the
// censored Tobit term with noise variance s, from math.Erfc.
func refLogLik(o Obs, f, s float64) float64 {
	if !o.Censored {
		r := o.Y - f
		return -0.5*math.Log(2*math.Pi*s) - 0.5*r*r/s
	}
	// log P(y* ≥ u) = log Φ((f − u)/σ) = log ½erfc((u − f)/(σ√2)).
	return math.Log(0.5 * math.Erfc((o.Supply-f)/math.Sqrt(2*s)))
}

// TestLevelNoiseExpectMonteCarlo: Expect with per-observation noise
// against stratified Monte Carlo (stratifiedMC: 20 replicates of 4,000
// draws, 1,000 with -short, fixed seed) of an independent log-density
// with σ²ᵢ = σ² + c·max(Levelᵢ, 0), within 5 standard errors; LogPredictive against its independent closed form
// (1e-12 relative).
func TestLevelNoiseExpectMonteCarlo(t *testing.T) {
	const s2, c = 0.2, 0.3
	g, _ := NewGaussian(s2)
	tb, _ := NewTobit(s2)
	for _, l := range []interface{ SetLevelNoise(float64) error }{g, tb} {
		if err := l.SetLevelNoise(c); err != nil {
			t.Fatal(err)
		}
	}
	per := mcStrata()
	obs := []Obs{
		{Y: 4, Supply: inf, Level: 5}, {Y: 1, Supply: inf, Level: -2}, {Y: 2, Supply: inf},
		{Y: 3, Supply: 3, Censored: true, Level: 4}, {Y: 3, Supply: 3, Censored: true, Level: 30},
	}
	for li, lik := range []Scalar{g, tb} {
		for oi, o := range obs {
			if li == 0 && o.Censored {
				continue // the Gaussian treats censored sales as demand: covered above
			}
			s := refLevelVariance(s2, c, o.Level)
			for qi, q := range [][2]float64{{3.5, 0.5}, {2, 2}, {6, 0.1}} {
				m, v := q[0], q[1]
				rng := rand.New(rand.NewPCG(uint64(li), uint64(10*oi+qi)))
				means, ses := stratifiedMC(rng, per, func(z float64) [3]float64 {
					return [3]float64{refLogLik(o, m+math.Sqrt(v)*z, s)}
				})
				mean, se := means[0], ses[0]
				e, _, _ := lik.Expect(o, m, v)
				if math.Abs(e-mean) > 5*se+1e-9*(1+math.Abs(mean)) {
					t.Errorf("%T %+v m=%g v=%g: Expect %.10g, Monte Carlo %.10g ± %.2g", lik, o, m, v, e, mean, se)
				}
				want := -0.5*math.Log(2*math.Pi*(v+s)) - 0.5*(o.Y-m)*(o.Y-m)/(v+s)
				if o.Censored && li == 1 {
					want = math.Log(0.5 * math.Erfc((o.Supply-m)/math.Sqrt(2*(v+s))))
				}
				if lp := lik.LogPredictive(o, m, v); math.Abs(lp-want) > 1e-12*(1+math.Abs(want)) {
					t.Errorf("%T %+v m=%g v=%g: LogPredictive %.15g, closed form %.15g", lik, o, m, v, lp, want)
				}
			}
		}
	}
}

// TestNoiseVarianceAt: σ² + c·max(level, 0) with level noise, σ² without,
// through the likelihoods and the package function (0 for counts).
func TestNoiseVarianceAt(t *testing.T) {
	const s2, c = 0.4, 1.5
	g, _ := NewGaussian(s2)
	tb, _ := NewTobit(s2)
	p, _ := NewPoisson(ExpLink)
	levels := []float64{-3, 0, 2, 10}
	for _, level := range levels {
		for _, l := range []Likelihood{Factorised{g}, Factorised{tb}} {
			if got := NoiseVarianceAt(l, level); got != s2 {
				t.Errorf("%T off, level %g: %g, want %g", l, level, got, s2)
			}
		}
		if got := NoiseVarianceAt(Factorised{p}, level); got != 0 {
			t.Errorf("Poisson level %g: %g, want 0", level, got)
		}
	}
	_ = g.SetLevelNoise(c)
	_ = tb.SetLevelNoise(c)
	for _, level := range levels {
		want := refLevelVariance(s2, c, level)
		for _, l := range []Likelihood{Factorised{g}, Factorised{tb}} {
			if got := NoiseVarianceAt(l, level); math.Abs(got-want) > 1e-15*want {
				t.Errorf("%T on, level %g: %g, want %g", l, level, got, want)
			}
			if l.NoiseVariance() != s2 {
				t.Errorf("%T: NoiseVariance %g, want σ² = %g", l, l.NoiseVariance(), s2)
			}
		}
	}
	for _, bad := range []float64{0, -1, math.NaN(), inf} {
		if err := g.SetLevelNoise(bad); err == nil {
			t.Errorf("SetLevelNoise(%g) accepted", bad)
		}
	}
}

// TestLevelNoiseOffIgnoresLevel: without level noise the parameters are
// σ² alone and Obs.Level changes no number (bit for bit).
func TestLevelNoiseOffIgnoresLevel(t *testing.T) {
	g, _ := NewGaussian(0.3)
	tb, _ := NewTobit(0.3)
	for _, l := range []Scalar{g, tb} {
		if l.NumParams() != 1 || len(l.ParamNames()) != 1 || l.ParamNames()[0] != "variance" {
			t.Errorf("%T: parameters %v", l, l.ParamNames())
		}
		for _, o := range []Obs{{Y: 1, Supply: inf}, {Y: 1, Supply: 1, Censored: true}} {
			lo := o
			lo.Level = 7
			e0, d0, h0 := l.Expect(o, 0.8, 0.5)
			e1, d1, h1 := l.Expect(lo, 0.8, 0.5)
			g0, g1 := []float64{0}, []float64{0}
			l.ExpectParamGrad(o, 0.8, 0.5, g0)
			l.ExpectParamGrad(lo, 0.8, 0.5, g1)
			if e0 != e1 || d0 != d1 || h0 != h1 || g0[0] != g1[0] || l.LogPredictive(o, 0.8, 0.5) != l.LogPredictive(lo, 0.8, 0.5) {
				t.Errorf("%T %+v: the level changed the numbers without level noise", l, o)
			}
		}
	}
}
