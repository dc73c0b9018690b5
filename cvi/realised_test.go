package cvi

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dcgpd/dcgpd/diffusion"
)

// mcMoments accumulates the Monte Carlo mean and variance of a sample and
// the standard errors of both.
type mcMoments struct{ n, s1, s2, s3, s4 float64 }

func (m *mcMoments) add(x float64) {
	m.n++
	m.s1 += x
	m.s2 += x * x
	m.s3 += x * x * x
	m.s4 += x * x * x * x
}

// stats returns the mean, the variance and their standard errors.
func (m *mcMoments) stats() (mean, variance, seMean, seVar float64) {
	mean = m.s1 / m.n
	variance = m.s2/m.n - mean*mean
	c4 := m.s4/m.n - 4*mean*m.s3/m.n + 6*mean*mean*m.s2/m.n - 3*mean*mean*mean*mean
	return mean, variance, math.Sqrt(variance / m.n), math.Sqrt(math.Max(c4-variance*variance, 0) / m.n)
}

// truncatedNoise draws ε ~ N(0, s²) given ε ≥ lo by inversion on the
// upper tail: ε = −s·Φ⁻¹(U·Φ(−lo/s)), stable for thresholds far in the
// tail (no rejection, so f's law stays q's: no double counting).
func truncatedNoise(rng *rand.Rand, lo, s float64) float64 {
	p := 0.5 * math.Erfc(lo/s/math.Sqrt2) // P(ε ≥ lo)
	return -s * distuv.UnitNormal.Quantile(rng.Float64()*p)
}

// checkMC fails unless got is within 4 standard errors of the Monte Carlo
// estimate (and within abs, for rounding, when the standard error is 0).
func checkMC(t *testing.T, what string, got, mc, se float64) {
	t.Helper()
	if math.Abs(got-mc) > 4*se+1e-12*math.Max(1, math.Abs(mc)) {
		t.Errorf("%s: got %.6g, Monte Carlo %.6g ± %.2g (4 se = %.2g)", what, got, mc, se, 4*se)
	}
}

// TestRealisedTobitMonteCarlo: the Tobit cell's realised demand, mean and
// variance, against Monte Carlo with a fixed seed (f ~ q, ε from its
// truncated conditional), 4 standard errors (≈ 0.5% of the sd at 400 000
// draws), with and without level noise, q narrow and wide against σ.
func TestRealisedTobitMonteCarlo(t *testing.T) {
	cases := []struct {
		name         string
		m, v, u, s2  float64
		slope, level float64
	}{
		{"at the supply", 5, 1, 5, 2, 0, 0},
		{"mean below supply", 2, 0.5, 6, 1, 0, 0},
		{"mean above supply", 9, 2, 4, 1.5, 0, 0},
		{"wide q", 4, 25, 5, 0.5, 0, 0},
		{"level noise", 10, 3, 12, 1, 0.8, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb, err := NewTobit(c.s2)
			if err != nil {
				t.Fatal(err)
			}
			if c.slope > 0 {
				if err := tb.SetLevelNoise(c.slope); err != nil {
					t.Fatal(err)
				}
			}
			o := Obs{Y: c.u, Supply: c.u, Censored: true, Level: c.level}
			dm, dv := make([]float64, 1), make([]float64, 1)
			if err := RealisedDemand(Factorised{tb}, []Obs{o}, []float64{c.m}, []float64{c.v}, dm, dv); err != nil {
				t.Fatal(err)
			}
			s := math.Sqrt(tb.NoiseVarianceAt(c.level))
			rng := rand.New(rand.NewPCG(11, 12))
			var mc mcMoments
			for i := 0; i < 400000; i++ {
				f := c.m + math.Sqrt(c.v)*rng.NormFloat64()
				mc.add(f + truncatedNoise(rng, c.u-f, s))
			}
			mean, variance, seM, seV := mc.stats()
			checkMC(t, "mean", dm[0], mean, seM)
			checkMC(t, "variance", dv[0], variance, seV)
			if dm[0] < c.u {
				t.Errorf("realised demand %v below the supply %v it reached", dm[0], c.u)
			}
		})
	}
}

// TestRealisedTobitQuadrature: the 1-D expectation against a dense
// midpoint sum over ±12 sd (10⁵ cells), relative error below 1e-8, where
// q is much wider than σ (the graded rule's case) and narrow.
func TestRealisedTobitQuadrature(t *testing.T) {
	for _, c := range []struct{ m, v, u, s2 float64 }{{3, 400, 5, 0.25}, {3, 0.01, 5, 4}, {-20, 900, 0, 1}} {
		tb, _ := NewTobit(c.s2)
		gm, gv := tb.realised(Obs{Y: c.u, Supply: c.u, Censored: true}, c.m, c.v)
		sd, s := math.Sqrt(c.v), math.Sqrt(c.s2)
		const n = 100000
		lo, h := c.m-12*sd, 24*sd/n
		var w0, e1, e2, tv float64
		for i := 0; i < n; i++ {
			f := lo + (float64(i)+0.5)*h
			x := (f - c.m) / sd
			w := math.Exp(-0.5*x*x) * h / (sd * math.Sqrt(2*math.Pi))
			a := (c.u - f) / s
			lam := InvMills(a)
			y := f + s*lam
			w0 += w
			e1 += w * y
			e2 += w * y * y
			tv += w * c.s2 * (1 + a*lam - lam*lam)
		}
		wm, wv := e1/w0, e2/w0-(e1/w0)*(e1/w0)+tv/w0
		if math.Abs(gm-wm) > 1e-8*math.Max(1, math.Abs(wm)) || math.Abs(gv-wv) > 1e-8*math.Max(1, wv) {
			t.Errorf("%+v: got (%.12g, %.12g), dense sum (%.12g, %.12g)", c, gm, gv, wm, wv)
		}
	}
}

// TestRealisedCells: uncensored, missing and Gaussian cells are exact.
func TestRealisedCells(t *testing.T) {
	tb, _ := NewTobit(2)
	g, _ := NewGaussian(2)
	nan := math.NaN()
	obs := []Obs{{Y: 4, Supply: 9}, {Y: nan, Supply: 3}, {Y: 3, Supply: 3, Censored: true}}
	mean, vars := []float64{5, 6, 2}, []float64{1, 2, 0.5}
	dm, dv := make([]float64, 3), make([]float64, 3)
	if err := RealisedDemand(Factorised{tb}, obs, mean, vars, dm, dv); err != nil {
		t.Fatal(err)
	}
	if dm[0] != 4 || dv[0] != 0 || dm[1] != 6 || dv[1] != 4 || !(dm[2] > 3) {
		t.Errorf("tobit: got means %v variances %v", dm, dv)
	}
	if err := RealisedDemand(Factorised{g}, obs, mean, vars, dm, dv); err != nil {
		t.Fatal(err)
	}
	if dm[0] != 4 || dv[0] != 0 || dm[1] != 6 || dv[1] != 4 || dm[2] != 3 || dv[2] != 0 {
		t.Errorf("gaussian: got means %v variances %v", dm, dv)
	}
	p, _ := NewPoisson(ExpLink)
	if err := RealisedDemand(Factorised{p}, obs, mean, vars, dm, dv); !errors.Is(err, ErrNoRealised) {
		t.Errorf("poisson: got %v, want ErrNoRealised", err)
	}
	if err := RealisedDemand(Factorised{tb}, obs, mean[:2], vars, dm, dv); err == nil {
		t.Error("mismatched lengths accepted")
	}
}

// TestRealisedShiftEquivariant: shifting the mean, the observation and
// the supply by the prior mean shifts the estimate by it and leaves the
// variance (the level held), to 1e-10 relative.
func TestRealisedShiftEquivariant(t *testing.T) {
	tb, _ := NewTobit(1.5)
	_ = tb.SetLevelNoise(0.5)
	d := testRealisedDiffusion(t, 256)
	for _, lik := range []Likelihood{Factorised{tb}, d} {
		obs := []Obs{{Y: 6, Supply: 6, Censored: true, Level: 8}, {Y: 2, Supply: 7, Level: 3}, {Y: 5, Supply: 5, Censored: true, Level: 5}}
		mean, vars := []float64{7, 3, 4}, []float64{2, 1, 3}
		m0, v0 := make([]float64, 3), make([]float64, 3)
		if err := RealisedDemand(lik, obs, mean, vars, m0, v0); err != nil {
			t.Fatal(err)
		}
		for _, c := range []float64{-40, 13.5} {
			so, sm := append([]Obs(nil), obs...), append([]float64(nil), mean...)
			for k := range so {
				so[k].Y += c
				so[k].Supply += c
				sm[k] += c
			}
			m1, v1 := make([]float64, 3), make([]float64, 3)
			if err := RealisedDemand(lik, so, sm, vars, m1, v1); err != nil {
				t.Fatal(err)
			}
			for k := range m0 {
				if math.Abs(m1[k]-c-m0[k]) > 1e-10*math.Abs(c) || math.Abs(v1[k]-v0[k]) > 1e-10*v0[k] {
					t.Errorf("%T shift %v product %d: (%v, %v) against (%v, %v)", lik, c, k, m1[k]-c, v1[k], m0[k], v0[k])
				}
			}
		}
	}
}

// TestRealisedFarTails: a supply far above or below q stays finite and
// takes its limit: far above, the demand is just above the supply
// (u + σ²/(u − m) to first order, variance ≈ σ⁴/(u − m)²); far below, the
// censoring says nothing (m, v + σ²).
func TestRealisedFarTails(t *testing.T) {
	tb, _ := NewTobit(1)
	for _, c := range []struct{ m, u float64 }{{-1e4, 0}, {-1e8, 0}, {1e4, 0}, {1e8, 0}, {0, 40}} {
		got, gv := tb.realised(Obs{Y: c.u, Supply: c.u, Censored: true}, c.m, 1)
		if math.IsNaN(got) || math.IsInf(got, 0) || math.IsNaN(gv) || math.IsInf(gv, 0) || gv < 0 {
			t.Errorf("%+v: not finite: (%v, %v)", c, got, gv)
			continue
		}
		if c.u > c.m {
			// a ~ N((u−m)/σ, 1/σ²·v): to first order u + 1/(u−m).
			gap := c.u - c.m
			if got < c.u || math.Abs(got-c.u-1/gap) > 3/(gap*gap*gap)+1e-15*math.Abs(c.m) {
				t.Errorf("%+v: mean %v, want ≈ u + %v", c, got, 1/gap)
			}
			continue
		}
		// The variance is centred at m: its rounding is a few ulp of m.
		if math.Abs(got-c.m) > 1e-12*math.Abs(c.m) || math.Abs(gv-2) > 1e-12+4e-16*math.Abs(c.m) {
			t.Errorf("%+v: (%v, %v), want (m, 2)", c, got, gv)
		}
	}
}

// testRealisedDiffusion is three products in a row (0 → 1 and 2 → 1
// send 0.6 of their excess, 1 → 0 and 1 → 2 send 0.3 each) with level
// noise and the given number of points.
func testRealisedDiffusion(t *testing.T, points int) *Diffusion {
	t.Helper()
	tr, err := diffusion.NewTransitionDense(3, []float64{0, 0.6, 0, 0.3, 0, 0.3, 0, 0.6, 0})
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDiffusion(DiffusionOptions{Explicit: tr, Variance: 1.2, LevelNoise: true, NoiseSlope: 0.3, Points: points, Sites: DiagonalSites})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRealisedDiffusionMonteCarlo: the diffusion likelihood's realised
// demand (its quasi-Monte Carlo rule at 4096 points) against Monte Carlo
// with a fixed seed: f from the product of the marginals, the latent
// inflow D(f) through the operator, each censored product's ε from its
// truncated conditional given f (below at u − f − D(f)), its riders
// turned away (f + ε − u)⁺ sent on by the transition's rows; an
// uncensored product's demand y minus what it received. Within 4 times
// (the standard error of 400 000 draws plus 0.2% of the sd, 0.5% of the
// variance, for the rule's own error); achieved: the means within 2.4e-4
// (0.02% of the sd), the variances within 0.2%.
func TestRealisedDiffusionMonteCarlo(t *testing.T) {
	d := testRealisedDiffusion(t, 4096)
	obs := []Obs{{Y: 6, Supply: 6, Censored: true, Level: 8}, {Y: 2, Supply: 7, Level: 3}, {Y: 5, Supply: 5, Censored: true, Level: 5}}
	mean, vars := []float64{7, 3, 4.5}, []float64{2, 1, 3}
	dm, dv := make([]float64, 3), make([]float64, 3)
	if err := RealisedDemand(d, obs, mean, vars, dm, dv); err != nil {
		t.Fatal(err)
	}
	tr := d.Transition()
	op := diffusion.Operator{T: tr, Steps: 1}
	u := []float64{6, 7, 5}
	f, inflow, ystar, received := make([]float64, 3), make([]float64, 3), make([]float64, 3), make([]float64, 3)
	rng := rand.New(rand.NewPCG(3, 4))
	var mc [3]mcMoments
	for i := 0; i < 400000; i++ {
		for k := range f {
			f[k] = mean[k] + math.Sqrt(vars[k])*rng.NormFloat64()
		}
		if err := op.Apply(nil, inflow, f, u, nil); err != nil {
			t.Fatal(err)
		}
		clear(received)
		for k, o := range obs {
			if !o.Censored {
				continue
			}
			s := math.Sqrt(d.NoiseVarianceAt(o.Level))
			ystar[k] = f[k] + truncatedNoise(rng, u[k]-inflow[k]-f[k], s)
			mc[k].add(ystar[k])
			for j := range received {
				received[j] += tr.At(k, j) * math.Max(ystar[k]-u[k], 0)
			}
		}
		for k, o := range obs {
			if !o.Censored {
				mc[k].add(o.Y - received[k])
			}
		}
	}
	for k := range obs {
		mean, variance, seM, seV := mc[k].stats()
		checkMC(t, "mean of product "+string(rune('0'+k)), dm[k], mean, seM+0.002*math.Sqrt(variance))
		checkMC(t, "variance of product "+string(rune('0'+k)), dv[k], variance, seV+0.005*variance)
		if !(mc[k].s2 > 0) {
			t.Fatalf("product %d: empty sample", k)
		}
	}
	// The inflow matters here: product 1 receives the riders turned away
	// at 0 and 2, so its own demand is well below what was observed.
	if !(dm[1] < obs[1].Y-0.5) {
		t.Errorf("product 1: realised demand %v, observed %v: no inflow seen", dm[1], obs[1].Y)
	}
}

// TestRealisedDiffusionNoExcess: where no product can exceed its supply
// the diffusion estimate is the exact Tobit one.
func TestRealisedDiffusionNoExcess(t *testing.T) {
	d := testRealisedDiffusion(t, 64)
	obs := []Obs{{Y: 6, Supply: 60, Level: 8}, {Y: math.NaN(), Supply: 70, Level: 3}, {Y: 5, Supply: 50, Level: 5}}
	mean, vars := []float64{7, 3, 4.5}, []float64{2, 1, 3}
	dm, dv := make([]float64, 3), make([]float64, 3)
	if err := RealisedDemand(d, obs, mean, vars, dm, dv); err != nil {
		t.Fatal(err)
	}
	want := []float64{6, 3, 5}
	wantV := []float64{0, 1 + d.NoiseVarianceAt(3), 0}
	for k := range dm {
		if dm[k] != want[k] || math.Abs(dv[k]-wantV[k]) > 1e-15 {
			t.Errorf("product %d: (%v, %v), want (%v, %v)", k, dm[k], dv[k], want[k], wantV[k])
		}
	}
}

// BenchmarkRealisedDemand times the realised demand the runner adds to a
// bin's own estimates, one op = one bin of 10 products with the diffusion
// likelihood (64 points; a chain, every third product censored and its
// neighbours near their supply, so the points go through the map):
//
//	go test -run '^$' -bench RealisedDemand -benchmem ./cvi/
func BenchmarkRealisedDemand(b *testing.B) {
	const np = 10
	probs := make([]float64, np*np)
	for k := 0; k+1 < np; k++ {
		probs[k*np+k+1], probs[(k+1)*np+k] = 0.4, 0.4
	}
	tr, err := diffusion.NewTransitionDense(np, probs)
	if err != nil {
		b.Fatal(err)
	}
	d, err := NewDiffusion(DiffusionOptions{Explicit: tr, Variance: 4.5, LevelNoise: true, NoiseSlope: 0.5, Sites: DiagonalSites})
	if err != nil {
		b.Fatal(err)
	}
	obs, mean, vars := make([]Obs, np), make([]float64, np), make([]float64, np)
	for k := range obs {
		obs[k] = Obs{Y: 6, Supply: 8, Level: 10}
		if k%3 == 0 {
			obs[k] = Obs{Y: 8, Supply: 8, Censored: true, Level: 10}
		}
		mean[k], vars[k] = 8, 4
	}
	dm, dv := make([]float64, np), make([]float64, np)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := RealisedDemand(d, obs, mean, vars, dm, dv); err != nil {
			b.Fatal(err)
		}
	}
}

// TestInvMillsFast: λ and λ − z against survival's, relative error below
// 1e-12 on a grid over [−40, 40] that crosses the polynomial panels.
func TestInvMillsFast(t *testing.T) {
	for z := -40.0; z <= 40; z += 0.0137 {
		_, lam, lmw := survival(z)
		gl, glmw := invMillsFast(z)
		if math.Abs(gl-lam) > 1e-12*lam || math.Abs(glmw-lmw) > 1e-12*math.Abs(lmw) {
			t.Fatalf("z = %v: λ %v, λ−z %v; survival gives %v, %v", z, gl, glmw, lam, lmw)
		}
	}
}

// TestTurnedAwayMoments: the realised excess (ε − gap)⁺ of a censored
// product, ε ~ N(0, s²) given ε ≥ gap − inflow, against Simpson's rule
// on a dense grid (400 000 intervals over 40 s above the threshold, the
// density scaled by its value at the threshold so that far tails do not
// underflow), within 1e-10 relative (achieved: 2e-11 in the far tail,
// below 4e-13 elsewhere): the product in excess for sure
// (inflow 0), or possibly censored by the inflow alone, near and far in
// the tails.
func TestTurnedAwayMoments(t *testing.T) {
	for _, c := range []struct{ gap, inflow, s float64 }{
		{0, 0, 1}, {-3, 0, 2}, {2, 0, 1}, {40, 0, 1},
		{1, 1, 1}, {1, 5, 1.5}, {-2, 3, 1}, {10, 2, 1}, {3, 0.01, 2}, {-1, 10, 1}, {-9, 1, 1},
	} {
		lo := c.gap - c.inflow
		shift := math.Max(lo, 0)
		const n = 400000
		h := 40 * c.s / n
		var z, m1, m2 float64
		for i := 0; i <= n; i++ {
			x := lo + float64(i)*h
			w := 2.0
			if i == 0 || i == n {
				w = 1
			} else if i%2 == 1 {
				w = 4
			}
			w *= math.Exp(-(x*x - shift*shift) / (2 * c.s * c.s))
			e := math.Max(x-c.gap, 0)
			z += w
			m1 += w * e
			m2 += w * e * e
		}
		wantMean := m1 / z
		wantVar := m2/z - wantMean*wantMean
		gotMean, gotVar := turnedAwayMoments(c.gap, c.inflow, c.s)
		if math.Abs(gotMean-wantMean) > 1e-10*wantMean || math.Abs(gotVar-wantVar) > 1e-10*wantVar {
			t.Errorf("%+v: (%.12g, %.12g), Simpson (%.12g, %.12g)", c, gotMean, gotVar, wantMean, wantVar)
		}
	}
}
