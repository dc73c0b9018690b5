package filter

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"gonum.org/v1/gonum/mat"
)

// denseGP is the independent route every state-space result is checked
// against: the same prior built as an explicit (N·N_p)×(N·N_p) covariance
// and conditioned on the sites' Gaussian pseudo-observations by Cholesky.
type denseGP struct {
	lml      float64
	mean     []float64 // N·N_p posterior means of f
	cov      *mat.SymDense
	priorCov *mat.SymDense
	n, np    int
}

// newDenseGP conditions the prior of m over times on sites s.
func newDenseGP(t *testing.T, m *Model, times []float64, s *Sites) *denseGP {
	t.Helper()
	n, np := len(times), m.NumProducts()
	N := n * np
	K := mat.NewSymDense(N, nil)
	for a := 0; a < N; a++ {
		for b := 0; b <= a; b++ {
			K.SetSym(a, b, m.Cov(times[a/np], a%np, times[b/np], b%np))
		}
	}
	// Observed entries: products with positive precision.
	var obs []int
	for a := 0; a < N; a++ {
		if diagPrec(s, a/np, a%np) > 0 {
			obs = append(obs, a)
		}
	}
	no := len(obs)
	// Noise covariance (block inverse of the site precision) and ỹ.
	noise := mat.NewSymDense(no, nil)
	ytil := mat.NewVecDense(max(no, 1), nil)
	for start := 0; start < no; {
		bin := obs[start] / np
		end := start
		for end < no && obs[end]/np == bin {
			end++
		}
		q := end - start
		lam := mat.NewSymDense(q, nil)
		l1 := mat.NewVecDense(q, nil)
		l1v, l2v := s.Bin(bin)
		for i := 0; i < q; i++ {
			pi := obs[start+i] % np
			l1.SetVec(i, l1v[pi])
			for j := 0; j <= i; j++ {
				pj := obs[start+j] % np
				if s.Full {
					lam.SetSym(i, j, l2v[pi*np+pj])
				} else if i == j {
					lam.SetSym(i, i, l2v[pi])
				}
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(lam) {
			t.Fatalf("test sites of bin %d not positive definite", bin)
		}
		var v mat.SymDense
		if err := ch.InverseTo(&v); err != nil {
			t.Fatal(err)
		}
		var yb mat.VecDense
		yb.MulVec(&v, l1)
		for i := 0; i < q; i++ {
			ytil.SetVec(start+i, yb.AtVec(i))
			for j := 0; j <= i; j++ {
				noise.SetSym(start+i, start+j, v.At(i, j))
			}
		}
		start = end
	}
	g := &denseGP{n: n, np: np, priorCov: K, mean: make([]float64, N)}
	if no == 0 {
		g.cov = K
		return g
	}
	Koo := mat.NewSymDense(no, nil)
	Kxo := mat.NewDense(N, no, nil)
	for i, a := range obs {
		for j, b := range obs {
			if j <= i {
				Koo.SetSym(i, j, K.At(a, b)+noise.At(i, j))
			}
		}
		for x := 0; x < N; x++ {
			Kxo.Set(x, i, K.At(x, a))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(Koo) {
		t.Fatal("dense GP: K+noise not positive definite")
	}
	alpha := mat.NewVecDense(no, nil)
	if err := ch.SolveVecTo(alpha, ytil.SliceVec(0, no)); err != nil {
		t.Fatal(err)
	}
	g.lml = -0.5*mat.Dot(ytil.SliceVec(0, no), alpha) - 0.5*ch.LogDet() - 0.5*float64(no)*math.Log(2*math.Pi)
	// Jacobian of ỹ → natural parameters is absorbed: the state-space
	// log Z̃ is log N(ỹ | ·), exactly this.
	var mu mat.VecDense
	mu.MulVec(Kxo, alpha)
	for x := 0; x < N; x++ {
		g.mean[x] = mu.AtVec(x)
	}
	var sol mat.Dense
	if err := ch.SolveTo(&sol, Kxo.T()); err != nil {
		t.Fatal(err)
	}
	var red mat.Dense
	red.Mul(Kxo, &sol)
	post := mat.NewSymDense(N, nil)
	for a := 0; a < N; a++ {
		for b := 0; b <= a; b++ {
			post.SetSym(a, b, K.At(a, b)-0.5*(red.At(a, b)+red.At(b, a)))
		}
	}
	g.cov = post
	return g
}

func diagPrec(s *Sites, n, k int) float64 {
	_, l2 := s.Bin(n)
	if s.Full {
		return l2[k*s.NP+k]
	}
	return l2[k]
}

// randomTimes returns n sorted distinct times with irregular gaps.
func randomTimes(rng *rand.Rand, n int, span float64) []float64 {
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = rng.Float64() * span
	}
	sort.Float64s(ts)
	for i := 1; i < n; i++ {
		if ts[i] <= ts[i-1] {
			ts[i] = ts[i-1] + 1e-3
		}
	}
	return ts
}

// randomSites fills diagonal or full sites with a fraction of missing
// products per bin.
func randomSites(rng *rand.Rand, n, np int, full bool, missing float64) *Sites {
	s := NewSites(n, np, full)
	for b := 0; b < n; b++ {
		l1, l2 := s.Bin(b)
		var obs []int
		for k := 0; k < np; k++ {
			if rng.Float64() >= missing {
				obs = append(obs, k)
			}
		}
		if !full {
			for _, k := range obs {
				l2[k] = 0.5 + 3*rng.Float64()
				l1[k] = l2[k] * (rng.NormFloat64() + 0.5)
			}
			continue
		}
		// Full block on the observed products: Λ = A Aᵀ + diag.
		q := len(obs)
		A := make([]float64, q*q)
		for i := range A {
			A[i] = rng.NormFloat64()
		}
		for i, ki := range obs {
			for j, kj := range obs {
				var v float64
				for c := 0; c < q; c++ {
					v += A[i*q+c] * A[j*q+c]
				}
				if i == j {
					v += 0.5
				}
				l2[ki*np+kj] = v
			}
		}
		for _, k := range obs {
			l1[k] = rng.NormFloat64() * 2
		}
	}
	return s
}

type testCase struct {
	name  string
	model func(t *testing.T) *Model
	full  bool
}

func mustT(t *testing.T) func(kernel.Temporal, error) kernel.Temporal {
	return func(k kernel.Temporal, err error) kernel.Temporal {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
}

func indepModel(k func() (kernel.Temporal, error), np int) func(t *testing.T) *Model {
	return func(t *testing.T) *Model {
		kk, err := k()
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewModel(kk, nil, nil, np)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

func m32(s, l float64) func() (kernel.Temporal, error) {
	return func() (kernel.Temporal, error) { return kernel.NewMatern32(s, l) }
}
func m12(s, l float64) func() (kernel.Temporal, error) {
	return func() (kernel.Temporal, error) { return kernel.NewMatern12(s, l) }
}
func m52(s, l float64) func() (kernel.Temporal, error) {
	return func() (kernel.Temporal, error) { return kernel.NewMatern52(s, l) }
}

// relClose reports |a−b| <= tol·max(1, |b|).
func relClose(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

// checkAgainstDense compares a smoothed posterior with the dense GP.
func checkAgainstDense(t *testing.T, p *Posterior, g *denseGP, tol float64) {
	t.Helper()
	if !relClose(p.LogLik, g.lml, tol) {
		t.Errorf("lml: state-space %.15g, dense %.15g", p.LogLik, g.lml)
	}
	np := g.np
	for x := range g.mean {
		if !relClose(p.Mean[x], g.mean[x], tol) {
			t.Fatalf("mean[%d] (bin %d product %d): %.15g vs dense %.15g", x, x/np, x%np, p.Mean[x], g.mean[x])
		}
		if !relClose(p.Var[x], g.cov.At(x, x), tol) {
			t.Fatalf("var[%d]: %.15g vs dense %.15g", x, p.Var[x], g.cov.At(x, x))
		}
	}
	if p.Cov != nil {
		for n := 0; n < g.n; n++ {
			for i := 0; i < np; i++ {
				for j := 0; j < np; j++ {
					got := p.Cov[(n*np+i)*np+j]
					want := g.cov.At(n*np+i, n*np+j)
					if !relClose(got, want, tol) {
						t.Fatalf("cov bin %d (%d,%d): %.15g vs dense %.15g", n, i, j, got, want)
					}
				}
			}
		}
	}
}

func TestSmoothMatchesDenseGP(t *testing.T) {
	cases := []testCase{
		{"matern12/indep3", indepModel(m12(1.3, 2.0), 3), false},
		{"matern32/indep3", indepModel(m32(0.7, 1.5), 3), false},
		{"matern52/indep3", indepModel(m52(2.0, 3.0), 3), false},
		{"matern32/indep3/full-sites", indepModel(m32(0.7, 1.5), 3), true},
		{"matern52/indep2/full-sites", indepModel(m52(1.1, 0.8), 2), true},
		{"per-product/3", perProductModel(), false},
		{"per-product/3/full-sites", perProductModel(), true},
	}
	cases = append(cases, extraDenseCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 11))
			m := tc.model(t)
			times := randomTimes(rng, 35, 20)
			s := randomSites(rng, len(times), m.NumProducts(), tc.full, 0.3)
			var p Posterior
			if err := Smooth(&p, m, times, s); err != nil {
				t.Fatal(err)
			}
			g := newDenseGP(t, m, times, s)
			checkAgainstDense(t, &p, g, 1e-9)
			// Running again into the same Posterior reuses buffers and
			// gives identical results.
			lml := p.LogLik
			if err := Smooth(&p, m, times, s); err != nil {
				t.Fatal(err)
			}
			if p.LogLik != lml {
				t.Errorf("rerun changed lml: %v vs %v", p.LogLik, lml)
			}
			// The Bryson–Frazier marginals agree with the dense GP too.
			var mb Posterior
			if err := SmoothMarginals(&mb, m, times, s); err != nil {
				t.Fatal(err)
			}
			checkAgainstDense(t, &mb, g, 1e-9)
			// The filter alone gives the same log marginal likelihood.
			var f Posterior
			if err := Filter(&f, m, times, s); err != nil {
				t.Fatal(err)
			}
			if !relClose(f.LogLik, g.lml, 1e-9) {
				t.Errorf("filter-only lml %.15g vs dense %.15g", f.LogLik, g.lml)
			}
		})
	}
}

// perProductModel has a different kernel (and dimension) per product.
func perProductModel() func(t *testing.T) *Model {
	return func(t *testing.T) *Model {
		must := mustT(t)
		m, err := NewIndependentModel([]kernel.Temporal{must(kernel.NewMatern52(1.2, 2.0)), must(kernel.NewMatern32(0.6, 0.9)), must(kernel.NewMatern12(2.0, 4.0))})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}
