package cvi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/diffusion"
)

// meanFieldBin returns a bin of np products near their supplies, so that
// some are in excess at most points: every third censored, one missing,
// one with unlimited supply, and diagonal marginals.
func meanFieldBin(rng *rand.Rand, np int) (obs []Obs, mean, vars []float64) {
	obs = make([]Obs, np)
	mean, vars = make([]float64, np), make([]float64, np)
	for k := range obs {
		u := 2 + rng.Float64()
		obs[k] = Obs{Y: u - 0.5*rng.Float64(), Supply: u}
		if k%3 == 0 {
			obs[k].Y, obs[k].Censored = u, true
		}
		mean[k] = u + 0.6*rng.NormFloat64()
		vars[k] = 0.05 + 0.5*rng.Float64()
	}
	obs[np-2].Supply = math.Inf(1)
	obs[np-1].Y = math.NaN()
	return obs, mean, vars
}

// TestMeanFieldMatchesDense: the sparse one-step kernel of the diagonal
// sites gives the dense joint rule's numbers at the diagonal covariance
// (same points, same map): E, the gradient, the curvature's diagonal for
// both curvatures, and the whole Gauss–Newton matrix the online Newton
// step uses, with and without the supply-aware mask, on a complete and a
// sparse (K = 2) graph.
func TestMeanFieldMatchesDense(t *testing.T) {
	const np = 7
	rng := rand.New(rand.NewPCG(11, 12))
	feats := make([][]float64, np)
	for k := range feats {
		feats[k] = []float64{rng.Float64(), rng.Float64()}
	}
	for _, k := range []int{0, 2} {
		graph, err := diffusion.NewGraph(feats, diffusion.GraphOptions{K: k})
		if err != nil {
			t.Fatal(err)
		}
		for _, aware := range []bool{false, true} {
			for _, curvature := range []Curvature{GaussNewton, ExactCurvature} {
				t.Run(fmt.Sprintf("K=%d/aware=%v/curv=%d", k, aware, curvature), func(t *testing.T) {
					o := DiffusionOptions{Graph: graph, Lengthscale: 0.5, Sink: 0.2, Variance: 0.1,
						SupplyAware: aware, Curvature: curvature, Points: 256, Sites: DiagonalSites}
					diag, err := NewDiffusion(o)
					if err != nil {
						t.Fatal(err)
					}
					o.Sites = FullSites
					dense, err := NewDiffusion(o)
					if err != nil {
						t.Fatal(err)
					}
					for trial := 0; trial < 3; trial++ {
						obs, mean, vars := meanFieldBin(rng, np)
						P := make([]float64, np*np)
						for a := range vars {
							P[a*np+a] = vars[a]
						}
						g, c := make([]float64, np), make([]float64, np)
						gd, cd := make([]float64, np), make([]float64, np*np)
						e := diag.Expect(obs, mean, vars, g, c)
						ed := dense.Expect(obs, mean, P, gd, cd)
						close := func(what string, a, b float64) {
							t.Helper()
							if math.Abs(a-b) > 1e-12*(1+math.Abs(b)) {
								t.Errorf("trial %d: %s: mean field %.17g, dense %.17g", trial, what, a, b)
							}
						}
						close("E", e, ed)
						for a := 0; a < np; a++ {
							close(fmt.Sprintf("grad[%d]", a), g[a], gd[a])
							close(fmt.Sprintf("curv[%d]", a), c[a], cd[a*np+a])
						}
						if curvature != GaussNewton {
							continue
						}
						op, err := diag.operator(obs)
						if err != nil {
							t.Fatal(err)
						}
						sd := make([]float64, np)
						for a := range sd {
							sd[a] = math.Sqrt(vars[a])
						}
						npts, _ := diag.z.Dims()
						full := make([]float64, np*np)
						ef, err := diag.expectMeanField(op, obs, mean, vars, sd, g, full, mfFull, npts)
						if err != nil {
							t.Fatal(err)
						}
						close("E (full)", ef, ed)
						for a := 0; a < np*np; a++ {
							close(fmt.Sprintf("curv[%d,%d]", a/np, a%np), full[a], cd[a])
						}
					}
				})
			}
		}
	}
}

// BenchmarkMeanFieldExpect times one expectation of the online refinement
// for diagonal sites (64 points, ten products, a third censored, the
// coupled Gauss–Newton curvature), one op = one expectation.
func BenchmarkMeanFieldExpect(b *testing.B) {
	const np = 10
	rng := rand.New(rand.NewPCG(5, 5))
	feats := make([][]float64, np)
	for k := range feats {
		feats[k] = []float64{rng.Float64() * 1000, rng.Float64() * 1000}
	}
	graph, err := diffusion.NewGraph(feats, diffusion.GraphOptions{})
	if err != nil {
		b.Fatal(err)
	}
	d, err := NewDiffusion(DiffusionOptions{Graph: graph, Lengthscale: 300, Sink: 0.2, Variance: 1, Sites: DiagonalSites, Points: 64})
	if err != nil {
		b.Fatal(err)
	}
	obs, mean, vars := make([]Obs, np), make([]float64, np), make([]float64, np)
	for k := range obs {
		obs[k] = Obs{Y: 5 + 2*rng.NormFloat64(), Supply: math.Inf(1)}
		mean[k], vars[k] = obs[k].Y, 0.5
		if k%3 == 0 {
			obs[k] = Obs{Y: 3, Supply: 3, Censored: true}
			mean[k], vars[k] = 4.5, 1
		}
	}
	grad, curv := make([]float64, np), make([]float64, np*np)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := d.expectCoupled(obs, mean, vars, grad, curv, false); !ok {
			b.Fatal("no coupled curvature")
		}
	}
}

// TestExpectCoupledCoarse: the coarse expectation of the online
// refinement's first step is the LearnPoints rule, i.e. the first points
// of the nested set: a likelihood with Points = LearnPoints gives the
// same numbers.
func TestExpectCoupledCoarse(t *testing.T) {
	const np = 7
	rng := rand.New(rand.NewPCG(13, 14))
	graph := randomGraph(t, rng, np)
	o := DiffusionOptions{Graph: graph, Lengthscale: 0.5, Sink: 0.2, Variance: 0.1, Sites: DiagonalSites, Points: 64}
	fine, err := NewDiffusion(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Points = fine.opts.LearnPoints
	coarse, err := NewDiffusion(o)
	if err != nil {
		t.Fatal(err)
	}
	obs, mean, vars := meanFieldBin(rng, np)
	g, c := make([]float64, np), make([]float64, np*np)
	gw, cw := make([]float64, np), make([]float64, np*np)
	e, ok := fine.expectCoupled(obs, mean, vars, g, c, true)
	ew, okw := coarse.expectCoupled(obs, mean, vars, gw, cw, false)
	if !ok || !okw {
		t.Fatal("no coupled curvature")
	}
	if e != ew {
		t.Errorf("E: coarse %v, LearnPoints rule %v", e, ew)
	}
	for a := range g {
		if g[a] != gw[a] {
			t.Errorf("grad[%d]: coarse %v, LearnPoints rule %v", a, g[a], gw[a])
		}
	}
	for a := range c {
		if c[a] != cw[a] {
			t.Errorf("curv[%d]: coarse %v, LearnPoints rule %v", a, c[a], cw[a])
		}
	}
	if ef, _ := fine.expectCoupled(obs, mean, vars, g, c, false); ef == e {
		t.Error("the full rule gives the coarse rule's E")
	}
}

// TestMeanFieldManyCandidates: with more than 64 products that can be in
// excess the chain rule is summed point by point (the excess sets do not
// fit a bit mask), and still gives the dense rule's numbers.
func TestMeanFieldManyCandidates(t *testing.T) {
	const np = 70
	rng := rand.New(rand.NewPCG(21, 22))
	feats := make([][]float64, np)
	for k := range feats {
		feats[k] = []float64{rng.Float64(), rng.Float64()}
	}
	graph, err := diffusion.NewGraph(feats, diffusion.GraphOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	o := DiffusionOptions{Graph: graph, Lengthscale: 0.2, Sink: 0.2, Variance: 0.1, Points: 16, Sites: DiagonalSites}
	diag, err := NewDiffusion(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Sites = FullSites
	dense, err := NewDiffusion(o)
	if err != nil {
		t.Fatal(err)
	}
	obs, mean, vars := meanFieldBin(rng, np)
	obs[np-2].Supply = 3 // every product can be in excess
	P := make([]float64, np*np)
	for a := range vars {
		P[a*np+a] = vars[a]
	}
	g, full := make([]float64, np), make([]float64, np*np)
	gd, cd := make([]float64, np), make([]float64, np*np)
	e, ok := diag.expectCoupled(obs, mean, vars, g, full, false)
	if !ok {
		t.Fatal("no coupled curvature")
	}
	if len(diag.mf.cand) <= 64 {
		t.Fatalf("%d candidates: the point-by-point path is not taken", len(diag.mf.cand))
	}
	ed := dense.Expect(obs, mean, P, gd, cd)
	close := func(what string, a, b float64) {
		t.Helper()
		if math.Abs(a-b) > 1e-12*(1+math.Abs(b)) {
			t.Errorf("%s: mean field %.17g, dense %.17g", what, a, b)
		}
	}
	close("E", e, ed)
	for a := 0; a < np; a++ {
		close(fmt.Sprintf("grad[%d]", a), g[a], gd[a])
	}
	for a := range full {
		close(fmt.Sprintf("curv[%d,%d]", a/np, a%np), full[a], cd[a])
	}
}

// TestExactCurvatureIsTheVarianceDerivative: with diagonal sites the
// default (exact, Stein) curvature is twice the derivative of the point
// estimate of E in each product's variance, and the gradient its
// derivative in the mean, so a CVI fixed point is stationary in the
// estimate the ELBO uses (central differences, step 1e-6 of the variance;
// tolerance 1e-6 relative). The Gauss–Newton curvature is not: it differs
// by more than 1% wherever a product can be in excess.
func TestExactCurvatureIsTheVarianceDerivative(t *testing.T) {
	const np = 7
	rng := rand.New(rand.NewPCG(21, 22))
	graph := randomGraph(t, rng, np)
	o := DiffusionOptions{Graph: graph, Lengthscale: 0.5, Sink: 0.2, Variance: 0.1, Sites: DiagonalSites}
	exact, err := NewDiffusion(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Curvature = GaussNewton
	gn, err := NewDiffusion(o)
	if err != nil {
		t.Fatal(err)
	}
	g, c, cg := make([]float64, np), make([]float64, np), make([]float64, np)
	sg, sc := make([]float64, np), make([]float64, np)
	var gnOff int
	for trial := 0; trial < 5; trial++ {
		obs, mean, vars := meanFieldBin(rng, np)
		exact.Expect(obs, mean, vars, g, c)
		gn.Expect(obs, mean, vars, sg, cg)
		at := func(dm, dv float64, k int) float64 {
			m, v := append([]float64(nil), mean...), append([]float64(nil), vars...)
			m[k] += dm
			v[k] += dv
			return exact.Expect(obs, m, v, sg, sc)
		}
		for k := 0; k < np; k++ {
			hv, hm := 1e-6*vars[k], 1e-6*math.Sqrt(vars[k])
			dv := (at(0, hv, k) - at(0, -hv, k)) / (2 * hv)
			dm := (at(hm, 0, k) - at(-hm, 0, k)) / (2 * hm)
			if math.Abs(0.5*c[k]-dv) > 1e-6*(1+math.Abs(dv)) {
				t.Errorf("trial %d product %d: ½·curvature %.10g, ∂E/∂v %.10g", trial, k, 0.5*c[k], dv)
			}
			if math.Abs(g[k]-dm) > 1e-6*(1+math.Abs(dm)) {
				t.Errorf("trial %d product %d: gradient %.10g, ∂E/∂m %.10g", trial, k, g[k], dm)
			}
			if math.Abs(cg[k]-c[k]) > 1e-2*(1+math.Abs(c[k])) {
				gnOff++
			}
		}
	}
	t.Logf("Gauss–Newton off by more than 1%% in %d of %d", gnOff, 5*np)
	if gnOff == 0 {
		t.Error("Gauss–Newton and exact curvature agree everywhere: the test bins never reach the kinks")
	}
}

// randomGraph is the complete graph of np products at random points of
// the unit square.
func randomGraph(t *testing.T, rng *rand.Rand, np int) *diffusion.Graph {
	t.Helper()
	feats := make([][]float64, np)
	for k := range feats {
		feats[k] = []float64{rng.Float64(), rng.Float64()}
	}
	graph, err := diffusion.NewGraph(feats, diffusion.GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}
