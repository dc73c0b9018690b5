package cvi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/diffusion"
)

// levelCase is one route of the diffusion expectation: the options, the
// bin and whether ℓ and π are held (the mean-field parameter route).
type levelCase struct {
	name string
	opts DiffusionOptions
	np   int
	hold bool // ℓ and π held: the mean-field route gives the σ², c gradient
	far  bool // means far below supply: the factorised route
}

func levelCases() []levelCase {
	base := DiffusionOptions{Lengthscale: 300, Sink: 0.2, Variance: 0.3, Points: 64}
	with := func(f func(*DiffusionOptions)) DiffusionOptions {
		o := base
		f(&o)
		return o
	}
	return []levelCase{
		{name: "full", opts: base, np: 6},
		{name: "full/supply-aware", opts: with(func(o *DiffusionOptions) { o.SupplyAware = true }), np: 6},
		{name: "diagonal/dense", opts: with(func(o *DiffusionOptions) { o.Sites = DiagonalSites }), np: 6},
		{name: "diagonal/gauss-newton", opts: with(func(o *DiffusionOptions) { o.Sites, o.Curvature = DiagonalSites, GaussNewton }), np: 6},
		{name: "diagonal/mean-field", opts: with(func(o *DiffusionOptions) { o.Sites = DiagonalSites }), np: defaultMeanFieldParamsMin, hold: true},
		{name: "diagonal/mean-field/gauss-newton", opts: with(func(o *DiffusionOptions) { o.Sites, o.Curvature = DiagonalSites, GaussNewton }),
			np: defaultMeanFieldParamsMin, hold: true},
		{name: "meanonly", opts: with(func(o *DiffusionOptions) { o.Expectation = MeanOnly }), np: 6},
		{name: "full/factorised", opts: base, np: 6, far: true},
	}
}

// levelLik builds the case's likelihood on a city-like graph (8 nearest
// neighbours, 250 m apart), with level noise at slope c when c > 0.
func levelLik(t *testing.T, lc levelCase, c float64) *Diffusion {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, uint64(lc.np)))
	side := int(math.Ceil(math.Sqrt(float64(lc.np))))
	feats := make([][]float64, lc.np)
	for k := range feats {
		feats[k] = []float64{250*float64(k%side) + 50*rng.NormFloat64(), 250*float64(k/side) + 50*rng.NormFloat64()}
	}
	graph, err := diffusion.NewGraph(feats, diffusion.GraphOptions{K: 8})
	if err != nil {
		t.Fatal(err)
	}
	o := lc.opts
	o.Graph = graph
	if c > 0 {
		o.LevelNoise, o.NoiseSlope = true, c
	}
	d, err := NewDiffusion(o)
	if err != nil {
		t.Fatal(err)
	}
	if lc.hold {
		held := make([]bool, d.NumParams())
		held[1], held[2] = true, true
		d.HoldParams(held)
		if !d.meanFieldParams() {
			t.Fatal("the parameter gradient does not take the mean-field route")
		}
	}
	return d
}

// levelBin is a bin near the supplies (meanFieldBin) with levels in
// [−1, 5) when withLevels, else 0; means far below supply with lc.far.
func levelBin(rng *rand.Rand, lc levelCase, withLevels bool) (obs []Obs, mean, vars []float64) {
	obs, mean, vars = meanFieldBin(rng, lc.np)
	for k := range obs {
		if obs[k].Censored && math.IsInf(obs[k].Supply, 1) {
			obs[k].Censored = false // meanFieldBin's unlimited product is censored when np ≡ 2 (mod 3)
		}
		if withLevels {
			obs[k].Level = 6*rng.Float64() - 1
		}
		if lc.far {
			mean[k] -= 100
		}
	}
	return obs, mean, vars
}

// covOf returns the covariance argument of d's Expect for marginal
// variances vars: the diagonal matrix with full sites.
func covOf(d *Diffusion, vars []float64) []float64 {
	if !d.Joint() {
		return vars
	}
	np := len(vars)
	P := make([]float64, np*np)
	for a, v := range vars {
		P[a*np+a] = v
	}
	return P
}

// TestDiffusionLevelZeroIsUnchanged: with level noise on and every level
// 0, every route of the diffusion expectation gives bit for bit the
// numbers of the likelihood without level noise (E, mean gradient,
// curvature, dE/dσ², dE/dℓ, dE/dπ), and dE/dc = 0: the per-product noise
// path is the shared-σ² path.
func TestDiffusionLevelZeroIsUnchanged(t *testing.T) {
	for _, lc := range levelCases() {
		t.Run(lc.name, func(t *testing.T) {
			off, on := levelLik(t, lc, 0), levelLik(t, lc, 0.4)
			if on.NumParams() != off.NumParams()+1 || on.ParamNames()[on.NumParams()-1] != NoiseSlopeName {
				t.Fatalf("parameters with level noise %v, without %v", on.ParamNames(), off.ParamNames())
			}
			rng := rand.New(rand.NewPCG(7, 8))
			for trial := 0; trial < 3; trial++ {
				obs, mean, vars := levelBin(rng, lc, false)
				cov := covOf(off, vars)
				cw := len(cov)
				g0, h0, p0 := make([]float64, lc.np), make([]float64, cw), make([]float64, off.NumParams())
				g1, h1, p1 := make([]float64, lc.np), make([]float64, cw), make([]float64, on.NumParams())
				e0 := off.ExpectFused(obs, mean, cov, g0, h0, p0)
				e1 := on.ExpectFused(obs, mean, cov, g1, h1, p1)
				if math.IsNaN(e0) || math.IsInf(e0, 0) || e0 != e1 {
					t.Fatalf("trial %d: E %v without level noise, %v at level 0", trial, e0, e1)
				}
				for a := range g0 {
					if g0[a] != g1[a] {
						t.Fatalf("trial %d: grad[%d] %v, %v", trial, a, g0[a], g1[a])
					}
				}
				for a := range h0 {
					if h0[a] != h1[a] {
						t.Fatalf("trial %d: curv[%d] %v, %v", trial, a, h0[a], h1[a])
					}
				}
				for i := range p0 {
					if p0[i] != p1[i] {
						t.Fatalf("trial %d: dE/d%s %v, %v", trial, off.ParamNames()[i], p0[i], p1[i])
					}
				}
				if p1[len(p1)-1] != 0 {
					t.Fatalf("trial %d: dE/dc = %v at level 0", trial, p1[len(p1)-1])
				}
				lp0, lp1 := make([]float64, lc.np), make([]float64, lc.np)
				off.LogPredictive(obs, mean, cov, lp0)
				on.LogPredictive(obs, mean, cov, lp1)
				for a := range lp0 {
					if lp0[a] != lp1[a] && !(math.IsNaN(lp0[a]) && math.IsNaN(lp1[a])) {
						t.Fatalf("trial %d: LogPredictive[%d] %v, %v", trial, a, lp0[a], lp1[a])
					}
				}
			}
		})
	}
}

// TestDiffusionLevelZeroSparseUnchanged: the online step's sparse coupled
// route (expectCoupledSparse, the city path) at level 0 equals the route
// without level noise, for the per-excess-set sums (60 products) and the
// point-by-point chain rule (150). Without level noise the point-by-point
// route takes the fused loop, which sums in another order, so the
// comparison is to 1e-12 of the largest entry rather than bit for bit.
func TestDiffusionLevelZeroSparseUnchanged(t *testing.T) {
	t.Parallel()
	const tol = 1e-12
	for _, np := range []int{60, 150} {
		// The point loop's own sums, term by term: recipients point by point.
		lc := levelCase{opts: DiffusionOptions{Lengthscale: 300, Sink: 0.2, Variance: 1, Points: 64, Sites: DiagonalSites,
			Routes: DiffusionRoutes{PointRecipients: true}}, np: np}
		off, on := levelLik(t, lc, 0), levelLik(t, lc, 0.4)
		rng := rand.New(rand.NewPCG(9, uint64(np)))
		obs, mean, vars := levelBin(rng, lc, false)
		g0, g1 := make([]float64, np), make([]float64, np)
		e0, h0 := sparseExpect(t, off, obs, mean, vars, g0)
		e1, h1 := sparseExpect(t, on, obs, mean, vars, g1)
		if math.IsNaN(e0) || math.IsInf(e0, 0) || math.Abs(e0-e1) > tol*math.Abs(e0) {
			t.Fatalf("np %d: E %v, %v", np, e0, e1)
		}
		for _, c := range []struct {
			name string
			a, b []float64
		}{{"grad", g0, g1}, {"curvature", h0, h1}} {
			scale := 0.0
			for _, v := range c.a {
				scale = math.Max(scale, math.Abs(v))
			}
			for i := range c.a {
				if math.Abs(c.a[i]-c.b[i]) > tol*scale {
					t.Fatalf("np %d: %s[%d] %v, %v", np, c.name, i, c.a[i], c.b[i])
				}
			}
		}
	}
}

// sparseExpect runs the sparse coupled route and copies its curvature.
func sparseExpect(t *testing.T, d *Diffusion, obs []Obs, mean, vars, grad []float64) (float64, []float64) {
	t.Helper()
	e, h, ok := d.expectCoupledSparse(obs, mean, vars, grad, false)
	if !ok || h == nil {
		t.Fatal("no sparse coupled curvature")
	}
	return e, append([]float64(nil), h.val...)
}

// TestDiffusionLevelNoiseParamGradFD: on every route, with levels in
// [−1, 5) and slope c = 0.3, the parameter gradient (σ², ℓ, π, c; σ² and c
// where ℓ and π are held) equals the central difference (h = 1e-6) of the
// same fixed-point estimator within 1e-5·max(1, |fd|), and the mean
// gradient the central difference in m (h = 1e-7) within the same
// tolerance (the points are fixed: E is smooth in σ² and c, piecewise
// smooth in m).
func TestDiffusionLevelNoiseParamGradFD(t *testing.T) {
	for _, lc := range levelCases() {
		t.Run(lc.name, func(t *testing.T) {
			d := levelLik(t, lc, 0.3)
			theta := d.Params(nil)
			theta[2] = 0.3 // away from the sink's kink at θ = 0
			if err := d.SetParams(theta); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			obs, mean, vars := levelBin(rng, lc, true)
			cov := covOf(d, vars)
			np, cw := lc.np, len(cov)
			expect := func(m []float64) float64 {
				return d.Expect(obs, m, cov, make([]float64, np), make([]float64, cw))
			}
			grad := make([]float64, d.NumParams())
			e := d.ExpectParamGrad(obs, mean, cov, grad)
			if math.IsNaN(e) || math.IsInf(e, 0) {
				t.Fatal("E is NaN")
			}
			for i := range theta {
				if lc.hold && (i == 1 || i == 2) {
					continue
				}
				const h = 1e-6
				var f [2]float64
				for s, sign := range []float64{1, -1} {
					p := append([]float64(nil), theta...)
					p[i] += sign * h
					if err := d.SetParams(p); err != nil {
						t.Fatal(err)
					}
					f[s] = expect(mean)
				}
				_ = d.SetParams(theta)
				fd := (f[0] - f[1]) / (2 * h)
				if math.Abs(fd-grad[i]) > 1e-5*math.Max(1, math.Abs(fd)) {
					t.Errorf("dE/d%s = %.8g, finite difference %.8g", d.ParamNames()[i], grad[i], fd)
				}
				if i == len(theta)-1 && grad[i] == 0 {
					t.Error("dE/dc = 0: the levels do not reach the gradient")
				}
			}
			if lc.opts.Expectation == MeanOnly {
				return // its mean derivatives are the reference's approximation, not E's
			}
			gm := make([]float64, np)
			d.Expect(obs, mean, cov, gm, make([]float64, cw))
			for k := 0; k < np; k++ {
				const h = 1e-7
				m1 := append([]float64(nil), mean...)
				m2 := append([]float64(nil), mean...)
				m1[k] += h
				m2[k] -= h
				fd := (expect(m1) - expect(m2)) / (2 * h)
				if math.Abs(fd-gm[k]) > 1e-5*math.Max(1, math.Abs(fd)) {
					t.Errorf("dE/dm[%d] = %.8g, finite difference %.8g", k, gm[k], fd)
				}
			}
		})
	}
}

// TestDiffusionLevelNoiseMonteCarlo: the joint expectation with level noise
// against plain Monte Carlo (2·10⁵ draws, fixed seed) of an independent
// log-likelihood through the diffusion map with σ²_k = σ² + c·max(L_k, 0),
// within 5 standard errors plus the 4096-point QMC rule's own error.
func TestDiffusionLevelNoiseMonteCarlo(t *testing.T) {
	const np, s2, c = 5, 0.05, 0.2
	rng := rand.New(rand.NewPCG(11, 12))
	feats := make([][]float64, np)
	for i := range feats {
		feats[i] = []float64{rng.Float64() * 2, rng.Float64() * 2}
	}
	graph, _ := diffusion.NewGraph(feats, diffusion.GraphOptions{})
	for _, sites := range []Sites{FullSites, DiagonalSites} {
		t.Run(sites.String(), func(t *testing.T) {
			d, err := NewDiffusion(DiffusionOptions{Graph: graph, Lengthscale: 0.7, Sink: 0.2, Variance: s2, Points: 4096,
				Sites: sites, LevelNoise: true, NoiseSlope: c})
			if err != nil {
				t.Fatal(err)
			}
			obs := make([]Obs, np)
			mean, vars := make([]float64, np), make([]float64, np)
			for k := range obs {
				mean[k] = rng.NormFloat64()
				vars[k] = 0.1 + 0.3*rng.Float64()
				obs[k] = Obs{Y: mean[k] + 0.3*rng.NormFloat64(), Supply: 0.2, Level: 3*rng.Float64() - 0.5}
				if obs[k].Y >= 0.2 {
					obs[k].Y, obs[k].Censored = 0.2, true
				}
			}
			obs[2].Y = math.NaN()
			e := d.Expect(obs, mean, covOf(d, vars), make([]float64, np), make([]float64, len(covOf(d, vars))))
			op := diffusion.Operator{T: d.Transition(), Steps: 1}
			ws := diffusion.NewWorkspace(np, 1)
			f, g, u := make([]float64, np), make([]float64, np), make([]float64, np)
			for k := range u {
				u[k] = obs[k].Supply
			}
			const n = 200000
			var sum, sum2 float64
			for i := 0; i < n; i++ {
				for k := range f {
					f[k] = mean[k] + math.Sqrt(vars[k])*rng.NormFloat64()
				}
				if err := op.Apply(g, nil, f, u, ws); err != nil {
					t.Fatal(err)
				}
				var l float64
				for k, o := range obs {
					if !math.IsNaN(o.Y) {
						l += refLogLik(o, g[k], refLevelVariance(s2, c, o.Level))
					}
				}
				sum += l
				sum2 += l * l
			}
			mc := sum / n
			se := math.Sqrt((sum2/n - mc*mc) / n)
			if math.Abs(e-mc) > 5*se+1e-3*math.Abs(mc) {
				t.Errorf("E: QMC %.6g, Monte Carlo %.6g ± %.2g", e, mc, se)
			}
		})
	}
}

// TestDiffusionLevelNoiseParams: the slope is the last parameter, round
// trips through Params/SetParams/ParamValues, is validated, and the
// likelihood's NoiseVarianceAt follows it.
func TestDiffusionLevelNoiseParams(t *testing.T) {
	lc := levelCases()[0]
	d := levelLik(t, lc, 0.25)
	names := d.ParamNames()
	if fmt.Sprint(names) != fmt.Sprint([]string{"variance", "lengthscale", "sink", NoiseSlopeName}) {
		t.Fatalf("names %v", names)
	}
	vals := d.ParamValues(nil)
	if vals[3] != 0.25 || d.NoiseSlope() != 0.25 {
		t.Fatalf("values %v", vals)
	}
	if got, want := d.NoiseVarianceAt(4), refLevelVariance(0.3, 0.25, 4); math.Abs(got-want) > 1e-15 {
		t.Errorf("NoiseVarianceAt(4) = %v, want %v", got, want)
	}
	p := d.Params(nil)
	p[3] += 0.5
	if err := d.SetParams(p); err != nil {
		t.Fatal(err)
	}
	if got := d.Params(nil)[3]; math.Abs(got-p[3]) > 1e-12 {
		t.Errorf("slope round trip %v -> %v", p[3], got)
	}
	before := d.Params(nil)
	bad := append([]float64(nil), before...)
	bad[3] = math.NaN()
	if err := d.SetParams(bad); err == nil {
		t.Error("NaN slope accepted")
	}
	if after := d.Params(nil); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("failed SetParams changed %v -> %v", before, after)
	}
	o := lc.opts
	o.Graph = d.opts.Graph
	for _, c := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		o.LevelNoise, o.NoiseSlope = true, c
		if _, err := NewDiffusion(o); err == nil {
			t.Errorf("NoiseSlope %v accepted", c)
		}
	}
	// The worker copy keeps its own per-bin noise.
	w := d.Worker().(*Diffusion)
	if &w.binNoise[0] == &d.binNoise[0] {
		t.Error("a worker shares its parent's per-bin noise")
	}
}
