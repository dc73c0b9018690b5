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
