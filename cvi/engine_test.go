package cvi

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/diffusion"
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/filter/kernel"
)

// testData makes N bins × np products of noisy sinusoids, censored at a
// supply level, with a fraction of unobserved cells.
func testData(rng *rand.Rand, n, np int, supply float64) *Data {
	d := &Data{NP: np, Times: make([]float64, n), Obs: make([]Obs, n*np)}
	t := 0.0
	for i := 0; i < n; i++ {
		t += 0.2 + rng.Float64()
		d.Times[i] = t
		for k := 0; k < np; k++ {
			y := math.Sin(t/3+float64(k)) + 0.1*rng.NormFloat64()
			o := Obs{Y: y, Supply: supply}
			if y >= supply {
				o.Y, o.Censored = supply, true
			}
			if rng.Float64() < 0.15 {
				o.Y = math.NaN()
			}
			d.Obs[i*np+k] = o
		}
	}
	return d
}

// TestGaussianCVIIsExact: with a Gaussian likelihood, one CVI step with
// β = 1 from any sites gives the exact sites (λ₂ = 1/σ², λ₁ = y/σ²), and
// the ELBO then equals the exact log marginal likelihood of the data.
func TestGaussianCVIIsExact(t *testing.T) {
	for _, full := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(1, 2))
		data := testData(rng, 40, 3, math.Inf(1))
		k, _ := kernel.NewMatern32(1.1, 2.0)
		m, err := filter.NewModel(k, nil, nil, 3)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := NewGaussian(0.05)
		var lik Likelihood = Factorised{g}
		if full {
			lik = jointGaussian{Factorised{g}}
		}
		e, err := NewEngine(m, lik, data)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.Step(1); err != nil {
			t.Fatal(err)
		}
		// Exact sites.
		exact := filter.NewSites(len(e.Bins()), 3, false)
		for i, n := range e.Bins() {
			for kk, o := range data.Bin(n) {
				if !math.IsNaN(o.Y) {
					exact.SetGaussian(i, kk, o.Y, 0.05)
				}
			}
		}
		for i := 0; i < exact.N; i++ {
			for kk := 0; kk < 3; kk++ {
				l1, l2 := e.sites.Bin(i)
				want2 := exact.Nat2[i*3+kk]
				got2 := l2[kk]
				if full {
					got2 = l2[kk*3+kk]
				}
				if math.Abs(l1[kk]-exact.Nat1[i*3+kk]) > 1e-9*math.Max(1, math.Abs(exact.Nat1[i*3+kk])) || math.Abs(got2-want2) > 1e-9*want2 {
					t.Fatalf("full=%v bin %d product %d: site (%v, %v), want (%v, %v)", full, i, kk, l1[kk], got2, exact.Nat1[i*3+kk], want2)
				}
			}
		}
		elbo, err := e.ELBO()
		if err != nil {
			t.Fatal(err)
		}
		var p filter.Posterior
		if err := filter.Filter(&p, m, e.times, exact); err != nil {
			t.Fatal(err)
		}
		if math.Abs(elbo-p.LogLik) > 1e-9*math.Abs(p.LogLik) {
			t.Errorf("full=%v: ELBO %.15g, exact lml %.15g", full, elbo, p.LogLik)
		}
		// A second step changes nothing: the fixed point.
		_, change, err := e.Step(1)
		if err != nil {
			t.Fatal(err)
		}
		if change > 1e-9 {
			t.Errorf("full=%v: second step moved sites by %v", full, change)
		}
	}
}

// jointGaussian presents a factorised Gaussian as a joint likelihood, to
// exercise the full-site path.
type jointGaussian struct{ Factorised }

func (jointGaussian) Joint() bool { return true }

func (j jointGaussian) Expect(obs []Obs, mean, cov, grad, curv []float64) float64 {
	np := len(obs)
	vars := make([]float64, np)
	d := make([]float64, np)
	for k := range vars {
		vars[k] = cov[k*np+k]
	}
	e := j.Factorised.Expect(obs, mean, vars, grad, d)
	for i := range curv[:np*np] {
		curv[i] = 0
	}
	for k := range d {
		curv[k*np+k] = d[k]
	}
	return e
}

// TestTobitCVIConverges: damped CVI on censored data increases the ELBO
// to a fixed point, with β = 1 (backtracking) and with fixed damping.
func TestTobitCVIConverges(t *testing.T) {
	var final []float64
	for _, beta := range []float64{1, 0.5} {
		rng := rand.New(rand.NewPCG(5, 6))
		data := testData(rng, 60, 2, 0.6)
		k, _ := kernel.NewMatern52(1.0, 2.0)
		m, _ := filter.NewModel(k, nil, nil, 2)
		tb, _ := NewTobit(0.02)
		e, err := NewEngine(m, Factorised{tb}, data)
		if err != nil {
			t.Fatal(err)
		}
		it, elbo, err := e.Converge(beta, 1e-10, 300)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("beta %v: %d steps, ELBO %.12g", beta, it, elbo)
		if it == 300 {
			t.Errorf("beta %v: no convergence in 300 steps", beta)
		}
		again, err := e.ELBO()
		if err != nil || math.Abs(again-elbo) > 1e-12*math.Abs(elbo) {
			t.Errorf("beta %v: ELBO of the returned state %v, reported %v (%v)", beta, again, elbo, err)
		}
		final = append(final, elbo)
	}
	if math.Abs(final[0]-final[1]) > 1e-7*math.Abs(final[0]) {
		t.Errorf("fixed points differ: %v", final)
	}
}

// TestParallelExpectMatchesSerial: the bins evaluated on all cores with
// likelihood workers give what one goroutine gives, and a DCGP fit on
// censored data converges.
func TestParallelExpectMatchesSerial(t *testing.T) {
	e, _ := triangleEngine(t, 150, DiffusionOptions{})
	n, elbo, err := e.Converge(1, 1e-6, 100)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("converged in %d steps, ELBO %.8g", n, elbo)
	if n == 100 {
		t.Errorf("CVI did not converge to 1e-6 in 100 steps")
	}
	par, err := e.expect()
	if err != nil {
		t.Fatal(err)
	}
	grad := append([]float64(nil), e.grad...)
	ser, err := e.expectRange(e.lik, 0, len(e.bins), e.cov, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(par-ser) > 1e-12*math.Abs(ser) {
		t.Errorf("parallel Σ E = %.15g, serial %.15g", par, ser)
	}
	for i := range grad {
		if grad[i] != e.grad[i] {
			t.Fatalf("gradient %d differs: %v vs %v", i, grad[i], e.grad[i])
		}
	}
}

// TestFusedParamGradMatchesSeparatePass checks that the likelihood
// gradient summed during the expectation pass equals the separate
// ExpectParamGrad pass learning used before, for the joint and mean-only
// diffusion expectations (full and diagonal sites) with ℓ and π free.
func TestFusedParamGradMatchesSeparatePass(t *testing.T) {
	for _, o := range []DiffusionOptions{{Expectation: JointExpectation}, {Expectation: MeanOnly}, {Sites: DiagonalSites}} {
		exp := o
		e, _ := triangleEngine(t, 150, o)
		nm := e.model.NumParams()
		free := []int{nm, nm + 1, nm + 2}
		e.wantPG = true
		if _, _, err := e.Converge(1, 1e-8, 100); err != nil {
			t.Fatal(err)
		}
		all := append(e.model.Params(nil), e.lik.Params(nil)...)
		pm := newParamMap(e, free, nm, e.ParamNames(), all, 0.5, nil)
		fused, err := e.gradient(free, nm, 1e-5, pm.u0, pm)
		if err != nil {
			t.Fatal(err)
		}
		e.wantPG = false
		sep, err := e.gradient(free, nm, 1e-5, pm.u0, pm)
		if err != nil {
			t.Fatal(err)
		}
		for j := range sep {
			if math.Abs(fused[j]-sep[j]) > 1e-10*(1+math.Abs(sep[j])) {
				t.Errorf("options %+v, parameter %d: fused gradient %.15g, separate %.15g", exp, j, fused[j], sep[j])
			}
		}
	}
}

// TestFactorisedParallelMatchesSerial checks that the package's scalar
// likelihoods, evaluated on all cores, give exactly what one goroutine
// gives (run with -race to check they keep no per-call state).
func TestFactorisedParallelMatchesSerial(t *testing.T) {
	tb, _ := NewTobit(0.05)
	g, _ := NewGaussian(0.05)
	for name, lik := range map[string]Likelihood{"tobit": Factorised{tb}, "gaussian": Factorised{g}} {
		rng := rand.New(rand.NewPCG(8, 9))
		data := testData(rng, 200, 3, 0.5)
		k, _ := kernel.NewMatern32(1.0, 2.0)
		m, _ := filter.NewModel(k, nil, nil, 3)
		e, err := NewEngine(m, lik, data)
		if err != nil {
			t.Fatal(err)
		}
		if !parallelizable(lik) {
			t.Fatalf("%s: not evaluated in parallel", name)
		}
		if _, _, err := e.Converge(1, 1e-8, 50); err != nil {
			t.Fatal(err)
		}
		par, err := e.expect()
		if err != nil {
			t.Fatal(err)
		}
		grad := append([]float64(nil), e.grad...)
		curv := append([]float64(nil), e.curv...)
		ser, err := e.expectRange(e.lik, 0, len(e.bins), e.cov, nil)
		if err != nil {
			t.Fatal(err)
		}
		if par != ser {
			t.Errorf("%s: parallel Σ E = %.17g, serial %.17g", name, par, ser)
		}
		for i := range grad {
			if grad[i] != e.grad[i] || curv[i] != e.curv[i] {
				t.Fatalf("%s: derivatives of entry %d differ", name, i)
			}
		}
	}
}

// triangleEngine returns an engine for n bins of three products on a
// triangle graph with the diffusion likelihood of options o (Graph,
// Lengthscale 1, Sink 0.1 and Variance 0.02 filled in), on censored test
// data from a fixed seed.
func triangleEngine(t *testing.T, n int, o DiffusionOptions) (*Engine, *Diffusion) {
	t.Helper()
	rng := rand.New(rand.NewPCG(8, 9))
	data := testData(rng, n, 3, 0.5)
	k, _ := kernel.NewMatern32(1.0, 2.0)
	m, _ := filter.NewModel(k, nil, nil, 3)
	graph, err := diffusion.NewGraph([][]float64{{0, 0}, {1, 0}, {0, 1}}, diffusion.GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.Graph, o.Lengthscale, o.Sink, o.Variance = graph, 1, 0.1, 0.02
	lik, err := NewDiffusion(o)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(m, lik, data)
	if err != nil {
		t.Fatal(err)
	}
	return e, lik
}

// TestDiagonalSitesEngine: with diagonal sites the engine keeps one
// precision per product and bin, CVI converges, and each bin's expected
// log-likelihood is the full-site likelihood's at the diagonal covariance
// of the same marginals (the mean field is the joint rule with the
// correlations dropped).
func TestDiagonalSitesEngine(t *testing.T) {
	e, _ := triangleEngine(t, 150, DiffusionOptions{Sites: DiagonalSites})
	if e.sites.Full || len(e.sites.Nat2) != len(e.bins)*3 {
		t.Fatalf("sites: full %v, %d precisions for %d bins of 3 products", e.sites.Full, len(e.sites.Nat2), len(e.bins))
	}
	prior, err := e.ELBO()
	if err != nil {
		t.Fatal(err)
	}
	_, elbo, err := e.Converge(1, 1e-9, 200)
	if err != nil {
		t.Fatal(err)
	}
	if !(elbo > prior) || math.IsInf(elbo, 0) {
		t.Fatalf("ELBO %v at the prior, %v after CVI", prior, elbo)
	}
	_, fl := triangleEngine(t, 150, DiffusionOptions{})
	np := 3
	P := make([]float64, np*np)
	for i, n := range e.bins {
		clear(P)
		for k := 0; k < np; k++ {
			P[k*np+k] = e.post.Var[i*np+k]
		}
		got := fl.Expect(e.data.Bin(n), e.post.Mean[i*np:(i+1)*np], P, make([]float64, np), make([]float64, np*np))
		if math.Abs(got-e.ell[i]) > 1e-12*(1+math.Abs(got)) {
			t.Fatalf("bin %d: diagonal sites E = %.15g, full-site likelihood at diag(v) %.15g", n, e.ell[i], got)
		}
	}
}

// TestEngineState: the engine's sites and parameters change only through
// its methods, and the posterior follows them.
func TestEngineState(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	data := testData(rng, 50, 2, 0.6)
	k, _ := kernel.NewMatern32(1.0, 2.0)
	m, _ := filter.NewModel(k, nil, nil, 2)
	tb, _ := NewTobit(0.05)
	e, err := NewEngine(m, Factorised{tb}, data)
	if err != nil {
		t.Fatal(err)
	}
	_, elbo, err := e.Converge(1, 1e-9, 200)
	if err != nil {
		t.Fatal(err)
	}
	s := e.Sites()
	s.Nat1[0] += 100 // a copy: the engine keeps its own
	if got, _ := e.ELBO(); got != elbo {
		t.Errorf("changing the copy of the sites moved the ELBO: %v, was %v", got, elbo)
	}
	s.Nat1[0] -= 100
	// A fresh engine set to the converged sites has the same ELBO.
	m2 := m.Clone()
	e2, _ := NewEngine(m2, Factorised{tb}, data)
	if err := e2.SetSites(s); err != nil {
		t.Fatal(err)
	}
	if got, _ := e2.ELBO(); got != elbo {
		t.Errorf("ELBO after SetSites %v, want %v", got, elbo)
	}
	if err := e2.SetSites(filter.NewSites(3, 2, false)); err == nil {
		t.Error("SetSites accepted sites of another shape")
	}
	// SetParams moves the posterior; the old parameters bring it back.
	p := e2.Params()
	if len(p) != len(e2.ParamNames()) {
		t.Fatalf("%d parameters, %d names", len(p), len(e2.ParamNames()))
	}
	q := append([]float64(nil), p...)
	q[0] += 0.5
	if err := e2.SetParams(q); err != nil {
		t.Fatal(err)
	}
	if got, _ := e2.ELBO(); got == elbo {
		t.Error("ELBO did not follow SetParams")
	}
	if err := e2.SetParams(p); err != nil {
		t.Fatal(err)
	}
	if got, _ := e2.ELBO(); math.Abs(got-elbo) > 1e-9*math.Abs(elbo) {
		t.Errorf("ELBO back at the old parameters %v, want %v", got, elbo)
	}
	if err := e2.SetParams(p[:1]); err == nil {
		t.Error("SetParams accepted the wrong number of parameters")
	}
	bad := append([]float64(nil), p...)
	bad[len(bad)-1] = math.NaN() // the likelihood's variance
	if err := e2.SetParams(bad); err == nil {
		t.Error("SetParams accepted a NaN likelihood parameter")
	}
	if got := e2.Model().Params(nil); math.Abs(got[0]-p[0]) > 1e-12 {
		t.Errorf("model parameters not restored after the likelihood refused: %v, want %v", got, p[:2])
	}
}
