package cvi

import (
	"math"
	"math/rand/v2"
	"testing"
)

// family is one Scalar with the observations, latent values and Gaussian
// marginals q = N(m, v) on which the shared suite exercises it.
type family struct {
	name string
	lik  Scalar
	obs  []Obs
	fs   []float64    // latent values for the derivative checks
	qs   [][2]float64 // (m, v)
}

var inf = math.Inf(1)

func families(t testing.TB) []family {
	t.Helper()
	must := func(s Scalar, err error) Scalar {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Latent values putting the Tobit argument w = (u−f)/σ at the extremes
	// and at the regime boundaries of survival.
	tobitFs := func(u, s float64) []float64 {
		fs := []float64{u - 1, u, u + 1}
		for _, w := range []float64{1e5, 1e3, 40, 8.3, 5.0001, 4.9999, 1, 0, -1, -4.9999, -5.0001, -12, -30} {
			fs = append(fs, u-s*w)
		}
		return fs
	}
	// Level-dependent noise (σ²ᵢ = σ² + c·max(Levelᵢ, 0)): observations at
	// positive, zero and negative levels.
	levelNoisy := func(s interface {
		Scalar
		SetLevelNoise(float64) error
	}, err error, c float64) Scalar {
		t.Helper()
		if err == nil {
			err = s.SetLevelNoise(c)
		}
		return must(s, err)
	}
	gl, err := NewGaussian(0.3)
	tl, err2 := NewTobit(0.01)
	return []family{
		{
			name: "Gaussian/level",
			lik:  levelNoisy(gl, err, 0.7),
			obs: []Obs{{Y: 0.7, Supply: inf, Level: 2.5}, {Y: -1.2, Supply: -1.2, Censored: true},
				{Y: 3, Supply: inf, Level: -4}, {Y: 9, Supply: inf, Level: 12}},
			fs: []float64{-3, 0, 0.7, 2.5, 40},
			qs: [][2]float64{{0.5, 0.2}, {-1, 3}, {8, 4}},
		},
		{
			name: "Tobit/level",
			lik:  levelNoisy(tl, err2, 0.02),
			obs: []Obs{{Y: 0.55, Supply: 0.8, Level: 3}, {Y: 0.5, Supply: 0.5, Censored: true, Level: 1.5},
				{Y: 0.5, Supply: 0.5, Censored: true}, {Y: 0.5, Supply: 0.5, Censored: true, Level: 40}},
			fs: tobitFs(0.5, 0.2),
			qs: [][2]float64{{0.45, 0.04}, {0.3, 1e-4}, {0.9, 1}, {-2, 0.25}},
		},
		{
			name: "Gaussian",
			lik:  must(NewGaussian(0.3)),
			obs:  []Obs{{Y: 0.7, Supply: inf}, {Y: -1.2, Supply: -1.2, Censored: true}},
			fs:   []float64{-3, 0, 0.7, 2.5, 40},
			qs:   [][2]float64{{0.5, 0.2}, {-1, 3}},
		},
		{
			name: "Tobit/s2=0.01",
			lik:  must(NewTobit(0.01)),
			obs:  []Obs{{Y: 0.55, Supply: 0.8}, {Y: 0.5, Supply: 0.5, Censored: true}},
			fs:   tobitFs(0.5, 0.1),
			qs:   [][2]float64{{0.45, 0.04}, {0.3, 1e-4}, {0.9, 1}, {-2, 0.25}},
		},
		{
			name: "Tobit/s2=0.5",
			lik:  must(NewTobit(0.5)),
			obs:  []Obs{{Y: 3, Supply: inf}, {Y: 12, Supply: 12, Censored: true}},
			fs:   tobitFs(12, math.Sqrt(0.5)),
			qs:   [][2]float64{{10, 2}, {14, 0.1}, {12, 25}},
		},
		{
			name: "Poisson/exp",
			lik:  must(NewPoisson(ExpLink)),
			obs:  []Obs{{Y: 0, Supply: inf}, {Y: 7, Supply: 7, Censored: true}},
			fs:   []float64{-40, -3, 0, 1.9, 5, 30},
			qs:   [][2]float64{{1, 0.5}, {2, 0.01}, {-1, 2}},
		},
		{
			name: "Poisson/softplus",
			lik:  must(NewPoisson(SoftplusLink)),
			obs:  []Obs{{Y: 0, Supply: inf}, {Y: 4, Supply: inf}},
			fs:   []float64{-40, -18.4, -18.5, -5, -0.1, 0, 0.1, 4, 30, 800},
			qs:   [][2]float64{{0.5, 2}, {3, 0.1}, {-3, 1}},
		},
		{
			name: "CensoredPoisson/exp",
			lik:  must(NewCensoredPoisson(ExpLink)),
			obs: []Obs{
				{Y: 3, Supply: 10}, {Y: 5, Supply: 5, Censored: true}, {Y: 1, Supply: 1, Censored: true},
				{Y: 2.5, Supply: 2.5, Censored: true}, {Y: 0, Supply: 0, Censored: true},
				{Y: 60, Supply: 60, Censored: true},
			},
			// μ ≪ k (series), μ ≈ (k+1)/2 (branch switch), μ ≈ k, μ ≫ k.
			fs: []float64{-30, -3, 0, math.Log(2.9), math.Log(3.1), math.Log(5), 2.5, 4, math.Log(30.4), math.Log(30.6), 6, 12},
			qs: [][2]float64{{math.Log(5), 1}, {1, 0.05}, {4, 0.3}},
		},
		{
			name: "CensoredPoisson/softplus",
			lik:  must(NewCensoredPoisson(SoftplusLink)),
			obs:  []Obs{{Y: 2, Supply: 9}, {Y: 4, Supply: 4, Censored: true}, {Y: 40, Supply: 40, Censored: true}},
			fs:   []float64{-30, -2, 0, 1, 3, 4, 10, 25, 40, 60, 200},
			qs:   [][2]float64{{3, 4}, {38, 9}, {1, 0.01}},
		},
	}
}

// fdClose reports whether a central difference fd matches the analytic an:
// 1e-6 relative, plus the rounding of the differenced values (≈ ε·scale/h).
func fdClose(fd, an, scale, h float64) bool {
	return math.Abs(fd-an) <= 1e-6*math.Max(math.Abs(an), math.Abs(fd))+100*0x1p-52*scale/h
}

// fdStep is a central-difference step at f for a function with value y and
// derivative dy: small against both |f| and the scale |y/dy| on which y
// changes (tails like e^{−w²/2} change fast), but not below rounding.
func fdStep(f, y, dy float64) float64 {
	a := math.Max(1, math.Abs(f))
	h := 1e-5 * a
	if dy != 0 {
		h = math.Min(h, 1e-4*math.Abs(y/dy))
	}
	return math.Max(h, 1e-8*a)
}

func TestLogLikDerivatives(t *testing.T) {
	for _, fam := range families(t) {
		for _, o := range fam.obs {
			for _, f := range fam.fs {
				l, dl, d2l := fam.lik.LogLik(o, f)
				if math.IsNaN(l) || math.IsNaN(dl) || math.IsNaN(d2l) {
					t.Errorf("%s %+v f=%g: NaN (%g, %g, %g)", fam.name, o, f, l, dl, d2l)
					continue
				}
				h := fdStep(f, l, dl)
				lp, _, _ := fam.lik.LogLik(o, f+h)
				lm, _, _ := fam.lik.LogLik(o, f-h)
				if fd := (lp - lm) / (2 * h); !fdClose(fd, dl, math.Abs(l), h) {
					t.Errorf("%s %+v f=%g: dl = %.12g, central difference %.12g", fam.name, o, f, dl, fd)
				}
				h = fdStep(f, dl, d2l)
				_, dlp, _ := fam.lik.LogLik(o, f+h)
				_, dlm, _ := fam.lik.LogLik(o, f-h)
				if fd := (dlp - dlm) / (2 * h); !fdClose(fd, d2l, math.Abs(dl), h) {
					t.Errorf("%s %+v f=%g: d2l = %.12g, central difference %.12g", fam.name, o, f, d2l, fd)
				}
			}
		}
	}
}

// mcStrata is the number of draws in each of mcReps replicates of a
// stratified Monte Carlo estimate: 4,000, or 1,000 with -short. Against
// the 10⁶ plain draws these tests took before (their standard error
// estimated from 10⁵), 8×10⁴ stratified draws give a standard error 600
// times smaller at the median (at most 0.005 times the old) on Expect's
// 214 checks whose bound the standard error sets (not the 1e-9 floor),
// and 300 times smaller at the median (at most 0.09 times) on
// LogPredictive's 85.
func mcStrata() int {
	if testing.Short() {
		return 1000
	}
	return 4000
}

// mcReps is the number of independent replicates whose spread gives a
// stratified estimate's standard error (19 degrees of freedom: a
// Student-t beyond 5 has probability 8e-5).
const mcReps = 20

// mcWidth is the scale of stratifiedMC's proposal N(0, mcWidth²).
const mcWidth = 2.0

// stratifiedMC estimates E[g(z)] for z ~ N(0, 1) from mcReps independent
// replicates, each the weighted average of g over per draws from the
// proposal N(0, mcWidth²), one uniformly placed in each of per strata of
// equal probability (z = mcWidth·Φ⁻¹((i+U)/per)), with the importance
// weights φ(z)/(φ(z/mcWidth)/mcWidth) ≤ mcWidth normalised to sum to one
// (so that a constant g is exact; the ratio's bias is of the order of its
// variance, far below its standard error): an estimate whose error for a
// smooth g falls as per^(-3/2) instead of per^(-1/2).
// The wide proposal puts strata where z ~ N(0, 1) rarely goes: an
// integrand that jumps beyond 4.5 sd (a censored Tobit's curvature) is
// sampled there in every replicate, not once in thirty. It returns the
// mean of the replicates and its standard error, from their spread.
func stratifiedMC(rng *rand.Rand, per int, g func(z float64) [3]float64) (mean, se [3]float64) {
	var reps [mcReps][3]float64
	for r := range reps {
		var sw float64
		for i := 0; i < per; i++ {
			u := (float64(i) + rng.Float64()) / float64(per)
			if u == 0 {
				u = math.SmallestNonzeroFloat64
			}
			x := math.Sqrt2 * math.Erfinv(2*u-1)
			z := mcWidth * x
			w := mcWidth * math.Exp(-0.5*(z*z-x*x))
			sw += w
			for j, y := range g(z) {
				reps[r][j] += w * y
			}
		}
		for j := range reps[r] {
			reps[r][j] /= sw
			mean[j] += reps[r][j] / mcReps
		}
	}
	for j := range se {
		var ss float64
		for _, rep := range reps {
			d := rep[j] - mean[j]
			ss += d * d
		}
		se[j] = math.Sqrt(ss / (mcReps - 1) / mcReps)
	}
	return mean, se
}

// Expect against stratified Monte Carlo (20 replicates of 4,000 draws):
// within 5 standard errors (plus 1e-9 relative for the summation error of
// terms constant in f).
func TestExpectMonteCarlo(t *testing.T) {
	per := mcStrata()
	for fi, fam := range families(t) {
		for oi, o := range fam.obs {
			for qi, q := range fam.qs {
				m, v := q[0], q[1]
				rng := rand.New(rand.NewPCG(uint64(fi), uint64(100*oi+qi)))
				s := math.Sqrt(v)
				mean, se := stratifiedMC(rng, per, func(z float64) [3]float64 {
					l, dl, d2l := fam.lik.LogLik(o, m+s*z)
					return [3]float64{l, dl, d2l}
				})
				e, dm, d2m := fam.lik.Expect(o, m, v)
				for j, got := range [3]float64{e, dm, d2m} {
					if math.Abs(got-mean[j]) > 5*se[j]+1e-9*(1+math.Abs(mean[j])) {
						t.Errorf("%s %+v m=%g v=%g: moment %d = %.10g, Monte Carlo %.10g ± %.2g",
							fam.name, o, m, v, j, got, mean[j], se[j])
					}
				}
			}
		}
	}
}

// dE/dm and d²E/dm² against central differences of Expect in m, and
// d²E/dm² = 2 dE/dv.
func TestExpectDerivatives(t *testing.T) {
	for _, fam := range families(t) {
		for _, o := range fam.obs {
			for _, q := range fam.qs {
				m, v := q[0], q[1]
				e, dm, d2m := fam.lik.Expect(o, m, v)
				h := 1e-4 * math.Sqrt(v)
				ep, dmp, _ := fam.lik.Expect(o, m+h, v)
				em, dmm, _ := fam.lik.Expect(o, m-h, v)
				if fd := (ep - em) / (2 * h); !fdClose(fd, dm, math.Abs(e), h) {
					t.Errorf("%s %+v m=%g v=%g: dE/dm = %.12g, central difference %.12g", fam.name, o, m, v, dm, fd)
				}
				if fd := (dmp - dmm) / (2 * h); !fdClose(fd, d2m, math.Abs(dm), h) {
					t.Errorf("%s %+v m=%g v=%g: d2E/dm2 = %.12g, central difference %.12g", fam.name, o, m, v, d2m, fd)
				}
				dv := 1e-4 * v
				evp, _, _ := fam.lik.Expect(o, m, v+dv)
				evm, _, _ := fam.lik.Expect(o, m, v-dv)
				if fd := (evp - evm) / (2 * dv); !fdClose(2*fd, d2m, math.Abs(e), dv) {
					t.Errorf("%s %+v m=%g v=%g: d2E/dm2 = %.12g, 2 dE/dv = %.12g", fam.name, o, m, v, d2m, 2*fd)
				}
			}
		}
	}
}

// LogPredictive against Monte Carlo of ∫ p(y|f) N(f|m,v) df (stratified,
// as TestExpectMonteCarlo's, within 5 standard errors plus 1e-9). The
// integrand can peak far in the tail of q (a censored count far above the
// mean), so the draws come from a proposal N(c, max(2cv, v)) around the
// Laplace mode (scaled by stratifiedMC's mcWidth) and are
// importance-weighted; the estimate is unbiased for any proposal.
func TestLogPredictiveMonteCarlo(t *testing.T) {
	per := mcStrata()
	for fi, fam := range families(t) {
		for oi, o := range fam.obs {
			for qi, q := range fam.qs {
				m, v := q[0], q[1]
				rng := rand.New(rand.NewPCG(uint64(fi)+77, uint64(100*oi+qi)))
				lp := fam.lik.LogPredictive(o, m, v)
				c, cv := laplace(m, v, func(f float64) (float64, float64, float64) { return fam.lik.LogLik(o, f) })
				// At least q's variance: p(y|f) is bounded, so the weights
				// are too (a proposal narrower than half of v, as the
				// Laplace one of a censored term is, has weights of
				// infinite variance, and an estimate that misses the tail).
				cv = math.Max(2*cv, v)
				// Weights are scaled by e^{−lp} to stay representable.
				means, ses := stratifiedMC(rng, per, func(z float64) [3]float64 {
					f := c + math.Sqrt(cv)*z
					l, _, _ := fam.lik.LogLik(o, f)
					d := f - m
					return [3]float64{math.Exp(l - lp - 0.5*(d*d/v+math.Log(v)) + 0.5*(z*z+math.Log(cv)))}
				})
				mean, se := means[0], ses[0]
				if math.Abs(mean-1) > 5*se+1e-9 {
					t.Errorf("%s %+v m=%g v=%g: LogPredictive = %.10g, Monte Carlo %.10g (ratio %.6g ± %.2g)",
						fam.name, o, m, v, lp, lp+math.Log(mean), mean, se)
				}
			}
		}
	}
}

// A point mass q (v = 0) plugs in f = m; an invalid v gives NaN.
func TestExpectDegenerate(t *testing.T) {
	for _, fam := range families(t) {
		for _, o := range fam.obs {
			for _, f := range fam.fs[:3] {
				l, dl, d2l := fam.lik.LogLik(o, f)
				e, dm, d2m := fam.lik.Expect(o, f, 0)
				if e != l || dm != dl || d2m != d2l {
					t.Errorf("%s %+v m=%g v=0: Expect (%g, %g, %g) != LogLik (%g, %g, %g)", fam.name, o, f, e, dm, d2m, l, dl, d2l)
				}
				if lp := fam.lik.LogPredictive(o, f, 0); fam.name[:5] != "Gauss" && fam.name[:5] != "Tobit" && lp != l {
					t.Errorf("%s %+v m=%g v=0: LogPredictive %g != LogLik %g", fam.name, o, f, lp, l)
				}
				// A tiny v is continuous with v = 0.
				if e2, dm2, _ := fam.lik.Expect(o, f, 1e-14); math.Abs(e2-e) > 1e-9*(1+math.Abs(e)) || math.Abs(dm2-dm) > 1e-6*(1+math.Abs(dm)) {
					t.Errorf("%s %+v m=%g: v=1e-14 gives (%g, %g), v=0 (%g, %g)", fam.name, o, f, e2, dm2, e, dm)
				}
				for _, v := range []float64{-1, math.NaN(), inf} {
					e, dm, d2m := fam.lik.Expect(o, f, v)
					if !math.IsNaN(e) || !math.IsNaN(dm) || !math.IsNaN(d2m) {
						t.Errorf("%s %+v v=%g: Expect = (%g, %g, %g), want NaN", fam.name, o, v, e, dm, d2m)
					}
					if lp := fam.lik.LogPredictive(o, f, v); !math.IsNaN(lp) {
						t.Errorf("%s %+v v=%g: LogPredictive = %g, want NaN", fam.name, o, v, lp)
					}
				}
			}
		}
	}
}

// ExpectParamGrad against central differences of Expect in θ; it adds to
// grad and returns Expect's E.
func TestExpectParamGrad(t *testing.T) {
	for _, fam := range families(t) {
		np := fam.lik.NumParams()
		if len(fam.lik.ParamNames()) != np {
			t.Errorf("%s: %d names for %d params", fam.name, len(fam.lik.ParamNames()), np)
		}
		theta := fam.lik.Params(nil)
		for _, o := range fam.obs {
			for _, q := range fam.qs {
				m, v := q[0], q[1]
				grad := make([]float64, np)
				for i := range grad {
					grad[i] = 1 // ExpectParamGrad adds
				}
				e := fam.lik.ExpectParamGrad(o, m, v, grad)
				if ee, _, _ := fam.lik.Expect(o, m, v); e != ee {
					t.Errorf("%s %+v: ExpectParamGrad E = %g, Expect %g", fam.name, o, e, ee)
				}
				for i := 0; i < np; i++ {
					const h = 1e-5
					th := append([]float64(nil), theta...)
					th[i] = theta[i] + h
					if err := fam.lik.SetParams(th); err != nil {
						t.Fatal(err)
					}
					ep, _, _ := fam.lik.Expect(o, m, v)
					th[i] = theta[i] - h
					if err := fam.lik.SetParams(th); err != nil {
						t.Fatal(err)
					}
					em, _, _ := fam.lik.Expect(o, m, v)
					if err := fam.lik.SetParams(theta); err != nil {
						t.Fatal(err)
					}
					if fd := (ep - em) / (2 * h); !fdClose(fd, grad[i]-1, math.Abs(e), h) {
						t.Errorf("%s %+v m=%g v=%g: dE/d%s = %.12g, central difference %.12g",
							fam.name, o, m, v, fam.lik.ParamNames()[i], grad[i]-1, fd)
					}
				}
			}
		}
	}
}

func TestSetParams(t *testing.T) {
	for _, fam := range families(t) {
		np := fam.lik.NumParams()
		before := fam.lik.Params(make([]float64, np))
		bad := [][]float64{make([]float64, np+1)}
		if np > 0 {
			bad = append(bad, []float64{}, []float64{math.NaN()}, []float64{inf}, []float64{math.Inf(-1)}, []float64{-800})
		}
		for _, src := range bad {
			if err := fam.lik.SetParams(src); err == nil {
				t.Errorf("%s: SetParams(%v) accepted", fam.name, src)
			}
			if after := fam.lik.Params(nil); len(after) != np || (np > 0 && after[0] != before[0]) {
				t.Errorf("%s: failed SetParams(%v) changed params %v -> %v", fam.name, src, before, after)
			}
		}
		if err := fam.lik.SetParams(before); err != nil {
			t.Errorf("%s: round trip: %v", fam.name, err)
		}
		if after := fam.lik.Params(nil); len(after) != np || (np > 0 && relErr(after[0], before[0]) > 1e-14) {
			t.Errorf("%s: round trip %v -> %v", fam.name, before, after)
		}
	}
	g, _ := NewGaussian(1)
	if err := g.SetParams([]float64{2}); err != nil || relErr(g.Variance(), math.Log1p(math.Exp(2))) > 1e-15 {
		t.Errorf("SetParams(2): %v, variance %g", err, g.Variance())
	}
	if err := g.SetParams([]float64{-30}); err != nil || relErr(g.Variance(), math.Exp(-30)) > 1e-12 {
		t.Errorf("SetParams(-30): %v, variance %g (softplus must keep tiny variances)", err, g.Variance())
	}
	for _, v := range []float64{0, -1, math.NaN(), inf} {
		if _, err := NewGaussian(v); err == nil {
			t.Errorf("NewGaussian(%g) accepted", v)
		}
		if _, err := NewTobit(v); err == nil {
			t.Errorf("NewTobit(%g) accepted", v)
		}
	}
}

func TestObsValidate(t *testing.T) {
	for _, c := range []struct {
		o  Obs
		ok bool
	}{
		{Obs{Y: 1, Supply: inf}, true},
		{Obs{Y: 1, Supply: 0}, true},
		{Obs{Y: 3, Supply: 3, Censored: true}, true},
		{Obs{Y: math.NaN(), Supply: 1}, false},
		{Obs{Y: inf, Supply: inf}, false},
		{Obs{Y: 1, Supply: -1}, true}, // standardised thresholds
		{Obs{Y: 1, Supply: math.Inf(-1)}, false},
		{Obs{Y: 1, Supply: math.NaN()}, false},
		{Obs{Y: 1, Supply: inf, Censored: true}, false},
	} {
		if err := c.o.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: Validate() = %v", c.o, err)
		}
	}
}

// Expect allocates nothing on any path (closed form, Gauss–Hermite,
// graded rule).
func TestExpectNoAlloc(t *testing.T) {
	for _, fam := range families(t) {
		for _, o := range fam.obs {
			for _, q := range fam.qs {
				if a := testing.AllocsPerRun(10, func() { fam.lik.Expect(o, q[0], q[1]) }); a != 0 {
					t.Errorf("%s %+v m=%g v=%g: %g allocations", fam.name, o, q[0], q[1], a)
				}
			}
		}
	}
}
