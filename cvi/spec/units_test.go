package spec

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/cvi"
)

// unitsData is a small censored demand data set: 3 products on a line
// (features in metres), hourly bins, a daily rhythm, counts censored at a
// supply that runs out now and then. demand scales the counts and supply,
// hour is the length of an hour in the time unit.
func unitsData(demand, hour float64) (*cvi.Data, [][]float64) {
	rng := rand.New(rand.NewPCG(11, 12))
	const n, np = 120, 3
	d := &cvi.Data{NP: np, Times: make([]float64, n), Obs: make([]cvi.Obs, n*np)}
	for i := 0; i < n; i++ {
		d.Times[i] = float64(i) * hour
		for k := 0; k < np; k++ {
			rate := 6 + 4*math.Sin(2*math.Pi*float64(i)/24+float64(k)) + 2*math.Sin(float64(i)/7)
			y := math.Max(0, math.Round(rate+math.Sqrt(rate)*rng.NormFloat64()))
			supply := 6 + math.Floor(6*rng.Float64())
			o := cvi.Obs{Y: y, Supply: supply}
			if y >= supply {
				o.Y, o.Censored = supply, true
			}
			o.Y *= demand
			o.Supply *= demand
			d.Obs[i*np+k] = o
		}
	}
	return d, [][]float64{{0, 0}, {300, 0}, {600, 0}}
}

// TestLearningIsUnitFree: the same data with demand ×1000 and with times
// in seconds instead of hours gives the same fit: the posterior mean in
// the original units agrees within 1%, and every fit converges.
func TestLearningIsUnitFree(t *testing.T) {
	for _, tc := range []struct{ lik, sites string }{{"gaussian", ""}, {"tobit", ""}, {"diffusion", "full"}, {"diffusion", "diagonal"}} {
		lik, sites := tc.lik, tc.sites
		t.Run(lik+"/"+sites, func(t *testing.T) {
			fit := func(demand, hour float64) ([]float64, cvi.Result) {
				data, feats := unitsData(demand, hour)
				sum := Summarise(data, feats, false)
				sp := Spec{}
				sp.Model.Diffusion.Sites = sites
				if sites == "diagonal" {
					// 360 cells put the gradient test at 0.36 nats, below
					// what the 64-point estimate resolves here: with 64
					// points the ×1 and seconds fits end "line search
					// failed" 0.04 nats below the optimum and the means
					// differ by 1.6%; with 256 every fit converges.
					sp.Model.Diffusion.Points = 256
				}
				b, err := sp.Build(sum, lik)
				if err != nil {
					t.Fatal(err)
				}
				e, err := cvi.NewEngine(b.Model, b.Lik, data)
				if err != nil {
					t.Fatal(err)
				}
				opts := b.Options
				// The diffusion likelihood's Gauss–Newton fixed point is not
				// the ELBO's maximum over q, so its envelope gradient can
				// disagree with the ELBO: the finite-difference fallback
				// finishes those fits (README, "Fallback gradient").
				opts.Fallback = sites == "full"
				res, err := e.Learn(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				p, err := e.Posterior()
				if err != nil {
					t.Fatal(err)
				}
				m := append([]float64(nil), p.Mean...)
				for i := range m {
					m[i] /= demand
				}
				t.Logf("demand ×%g, hour = %g: %s (%s) after %d iterations, ELBO %.6g, params %v", demand, hour, res.Status, res.Detail, res.Iterations, res.ELBO, append(b.Model.Params(nil), b.Lik.Params(nil)...))
				return m, res
			}
			base, r0 := fit(1, 1)
			var scale float64
			for _, v := range base {
				scale = math.Max(scale, math.Abs(v))
			}
			for _, c := range []struct{ demand, hour float64 }{{1000, 1}, {1, 3600}} {
				m, r := fit(c.demand, c.hour)
				var worst float64
				for i := range m {
					worst = math.Max(worst, math.Abs(m[i]-base[i]))
				}
				t.Logf("demand ×%g, hour = %g: max |Δ mean| %.3g (max |mean| %.3g)", c.demand, c.hour, worst, scale)
				if worst > 0.01*scale {
					t.Errorf("demand ×%g, hour = %g: posterior mean differs by %.3g, more than 1%% of %.3g", c.demand, c.hour, worst, scale)
				}
				if !r.Converged || !r0.Converged {
					t.Errorf("not converged: %s / %s", r0.Detail, r.Detail)
				}
			}
		})
	}
}

// TestStagedFit: by default a diffusion fit first fits Tobit and starts
// from its kernel hyperparameters and noise variance; staged = false
// skips that stage.
func TestStagedFit(t *testing.T) {
	data, feats := unitsData(1, 1)
	sum := Summarise(data, feats, false)
	// With the fallback gradient allowed, so that both fits reach the test.
	f, err := Spec{Fit: Fit{Fallback: true}}.Learn(context.Background(), data, sum, "diffusion", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Stages) != 1 || f.Stages[0].Likelihood != "tobit" {
		t.Fatalf("stages %+v, want one Tobit stage", f.Stages)
	}
	// The Tobit stage's hyperparameters, rebuilt and learned alone.
	bt, err := Spec{}.Build(sum, "tobit")
	if err != nil {
		t.Fatal(err)
	}
	et, err := cvi.NewEngine(bt.Model, bt.Lik, data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := et.Learn(context.Background(), bt.Options); err != nil {
		t.Fatal(err)
	}
	t.Logf("tobit stage %s (%s); diffusion %s (%s), ELBO %.4f", f.Stages[0].Result.Status, f.Stages[0].Result.Detail, f.Result.Status, f.Result.Detail, f.Result.ELBO)
	if !f.Stages[0].Result.Converged || !f.Result.Converged {
		t.Errorf("not converged")
	}
	// Unstaged: no stage, and the fit ends near the staged one.
	off := false
	g, err := Spec{Fit: Fit{Staged: &off, Fallback: true}}.Learn(context.Background(), data, sum, "diffusion", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Stages) != 0 {
		t.Errorf("staged = false ran %d stages", len(g.Stages))
	}
	if d := math.Abs(g.Result.ELBO - f.Result.ELBO); d > 1e-3*math.Abs(f.Result.ELBO) {
		t.Errorf("staged ELBO %.4f, unstaged %.4f", f.Result.ELBO, g.Result.ELBO)
	}
	// The staged start is the Tobit fit's kernel hyperparameters and noise.
	b, err := Spec{}.Build(sum, "diffusion")
	if err != nil {
		t.Fatal(err)
	}
	if err := startFrom(b, bt); err != nil {
		t.Fatal(err)
	}
	bp, tp := b.Model.Params(nil), bt.Model.Params(nil)
	for i := range tp {
		if bp[i] != tp[i] {
			t.Errorf("model parameter %d starts at %v, Tobit fit %v", i, bp[i], tp[i])
		}
	}
	if b.Lik.NoiseVariance() != bt.Lik.NoiseVariance() {
		t.Errorf("noise variance starts at %v, Tobit fit %v", b.Lik.NoiseVariance(), bt.Lik.NoiseVariance())
	}
}
