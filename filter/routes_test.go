package filter

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"gonum.org/v1/gonum/mat"
)

// Tests of the small-state fast paths against the general ones, naive
// formulas or the dense GP.

// randomSym returns a random symmetric n×n matrix of rank k (full for
// k >= n), positive semi-definite if psd.
func randomSym(rng *rand.Rand, n, k int, psd bool) []float64 {
	a := make([]float64, n*n)
	if k >= n && !psd {
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				v := rng.NormFloat64()
				a[i*n+j], a[j*n+i] = v, v
			}
		}
		return a
	}
	g := make([]float64, n*k)
	for i := range g {
		g[i] = rng.NormFloat64()
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			for c := 0; c < k; c++ {
				a[i*n+j] += g[i*k+c] * g[j*k+c]
			}
		}
	}
	if k >= n {
		for i := 0; i < n; i++ {
			a[i*n+i] += 0.5
		}
	}
	return a
}

func maxAbsDiff(a, b []float64) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func TestLogProd(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	var lp logProd
	var want float64
	for i := 0; i < 5000; i++ {
		x := math.Exp(rng.NormFloat64() * 30)
		if i%500 == 0 {
			x = 1e300
		}
		if i%777 == 0 {
			x = 1e-300
		}
		lp.mul(x)
		want += math.Log(x)
	}
	if got := lp.log(); math.Abs(got-want) > 1e-9*math.Abs(want) {
		t.Errorf("log of the product %v, sum of the logs %v", got, want)
	}
	var empty logProd
	if empty.log() != 0 {
		t.Errorf("empty product has log %v", empty.log())
	}
	var z logProd
	z.mul(2)
	z.mul(0)
	if !math.IsInf(z.log(), -1) {
		t.Errorf("product with zero has log %v", z.log())
	}
}

// naiveUpdate is the textbook Kalman update of N(m, P) on z = C·x + e,
// e ~ N(0, I), with its full log-likelihood.
func naiveUpdate(m, P, C, z []float64, r, D int) (mf, pf []float64, ll float64) {
	Cm := mat.NewDense(r, D, append([]float64(nil), C...))
	Pm := mat.NewDense(D, D, append([]float64(nil), P...))
	var CP, S mat.Dense
	CP.Mul(Cm, Pm)
	S.Mul(&CP, Cm.T())
	for i := 0; i < r; i++ {
		S.Set(i, i, S.At(i, i)+1)
	}
	var Sinv mat.Dense
	if err := Sinv.Inverse(&S); err != nil {
		return nil, nil, math.NaN()
	}
	v := mat.NewVecDense(r, nil)
	for k := 0; k < r; k++ {
		var acc float64
		for j := 0; j < D; j++ {
			acc += C[k*D+j] * m[j]
		}
		v.SetVec(k, z[k]-acc)
	}
	var K mat.Dense // Pᵀ Cᵀ S⁻¹, D×r
	K.Mul(CP.T(), &Sinv)
	var dm mat.VecDense
	dm.MulVec(&K, v)
	var dP mat.Dense
	dP.Mul(&K, &CP)
	mf, pf = make([]float64, D), make([]float64, D*D)
	for i := 0; i < D; i++ {
		mf[i] = m[i] + dm.AtVec(i)
		for j := 0; j < D; j++ {
			pf[i*D+j] = P[i*D+j] - dP.At(i, j)
		}
	}
	var sv mat.VecDense
	sv.MulVec(&Sinv, v)
	ll = -0.5*float64(r)*log2Pi - 0.5*math.Log(mat.Det(&S)) - 0.5*mat.Dot(v, &sv)
	return mf, pf, ll
}

// TestSmallUpdates checks the small updates, the two-row one and the
// general one, against each other and the textbook update.
func TestSmallUpdates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for _, D := range []int{3, 6, 9} {
		for _, r := range []int{1, 2, 3} {
			P := randomSym(rng, D, D, true)
			m := make([]float64, D)
			for i := range m {
				m[i] = rng.NormFloat64()
			}
			// Rows measuring every third component, mixed.
			var sup []int
			for j := 0; j < D; j += 3 {
				sup = append(sup, j)
			}
			C, cs := supportedRows(rng, r, D, sup)
			z := make([]float64, r)
			for k := range z {
				z[k] = rng.NormFloat64()
			}
			wantM, wantP, wantLL := naiveUpdate(m, P, C, z, r, D)
			if wantM == nil {
				t.Fatal("singular innovation covariance")
			}
			check := func(name string, f func(mf, pf []float64, w *denseWork, det *logProd) (float64, error)) {
				var w denseWork
				w.grow(1, D, r)
				mf, pf := make([]float64, D), make([]float64, D*D)
				var det logProd
				ll, err := f(mf, pf, &w, &det)
				if err != nil {
					t.Fatalf("%s D=%d r=%d: %v", name, D, r, err)
				}
				ll -= det.log()
				if d := maxAbsDiff(mf, wantM); d > 1e-10 {
					t.Errorf("%s D=%d r=%d: mean off by %g", name, D, r, d)
				}
				if d := maxAbsDiff(pf, wantP); d > 1e-10 {
					t.Errorf("%s D=%d r=%d: covariance off by %g", name, D, r, d)
				}
				for i := 0; i < D; i++ {
					for j := 0; j < i; j++ {
						if pf[i*D+j] != pf[j*D+i] {
							t.Fatalf("%s D=%d r=%d: covariance not symmetric", name, D, r)
						}
					}
				}
				if math.Abs(ll-wantLL) > 1e-10*math.Max(1, math.Abs(wantLL)) {
					t.Errorf("%s D=%d r=%d: log-likelihood %v, want %v", name, D, r, ll, wantLL)
				}
			}
			check("updateSupport", func(mf, pf []float64, w *denseWork, det *logProd) (float64, error) {
				return updateSupport(mf, pf, m, P, cs, z, sup, r, D, w, det)
			})
			check("updateDense", func(mf, pf []float64, w *denseWork, det *logProd) (float64, error) {
				return updateDense(mf, pf, m, P, C, cs, z, sup, r, w, det)
			})
			if r == 2 {
				check("updateSupportTwoRows", func(mf, pf []float64, w *denseWork, det *logProd) (float64, error) {
					return updateSupportTwoRows(mf, pf, m, P, cs, z, sup, D, w, det)
				})
			}
		}
	}
}

// TestInformationUpdates checks the backward pass's information update:
// the two-row and the general small ones against the BLAS one.
func TestInformationUpdates(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 2))
	for _, D := range []int{3, 6, 10} {
		for _, r := range []int{1, 2, 3} {
			M := randomSym(rng, D, D, true)
			U := make([]float64, r*D)
			for i := range U {
				U[i] = rng.NormFloat64()
			}
			S := []int{0, D / 2, D - 1}
			if D == 3 {
				S = []int{0, 2}
			}
			V, VS := supportedRows(rng, r, D, S)
			want := append([]float64(nil), M...)
			updateInformation(want, U, V, make([]float64, r*D), make([]float64, r*r), make([]float64, r*D), r, D)
			X := make([]float64, r*D)
			mulSym(X, U, M, r, D)
			var b mbfWork
			b.grow(D, r, r)
			for _, c := range []struct {
				name string
				f    func(M []float64)
			}{
				{"updateInformationSupportRows", func(M []float64) { updateInformationSupportRows(M, U, VS, X, S, &b, r, D) }},
				{"updateInformationSupport", func(M []float64) { updateInformationSupport(M, U, VS, X, S, &b, r, D) }},
			} {
				got := append([]float64(nil), M...)
				c.f(got)
				if d := maxAbsDiff(got, want); d > 1e-10*math.Max(1, maxAbsDiff(want, make([]float64, D*D))) {
					t.Errorf("%s D=%d r=%d: off the BLAS update by %g", c.name, D, r, d)
				}
				for i := 0; i < D; i++ {
					for j := 0; j < i; j++ {
						if got[i*D+j] != got[j*D+i] {
							t.Fatalf("%s D=%d r=%d: not symmetric", c.name, D, r)
						}
					}
				}
			}
		}
	}
}

// TestBlockProducts checks the transition's block products (the unrolled
// 3×3 and 2×2 blocks and the general ones) against dense formulas, and
// mulSym and downdate against plain loops.
func TestBlockProducts(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	// A with diagonal blocks of 3, 1, 2, 4 and 3, two copies.
	sizes := []int{3, 1, 2, 4, 3}
	d := 0
	for _, n := range sizes {
		d += n
	}
	a, q := make([]float64, d*d), make([]float64, d*d)
	o := 0
	for _, n := range sizes {
		qb := randomSym(rng, n, n, true)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				a[(o+i)*d+o+j] = rng.NormFloat64()
				q[(o+i)*d+o+j] = qb[i*n+j]
			}
		}
		o += n
	}
	const m = 2
	D := m * d
	var tb tblocks
	tb.set(a, q, d, m, false)
	if len(tb.blk) != m*len(sizes) {
		t.Fatalf("%d blocks, want %d", len(tb.blk), m*len(sizes))
	}
	P := randomSym(rng, D, D, true)
	x := make([]float64, D)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	// Dense T = I_m ⊗ A.
	T := make([]float64, D*D)
	for c := 0; c < m; c++ {
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				T[(c*d+i)*D+c*d+j] = a[i*d+j]
			}
		}
	}
	want := make([]float64, D*D)
	wantY := make([]float64, D)
	for i := 0; i < D; i++ {
		for j := 0; j < D; j++ {
			var s float64
			for k := 0; k < D; k++ {
				for l := 0; l < D; l++ {
					s += T[i*D+k] * P[k*D+l] * T[j*D+l]
				}
			}
			if i/d == j/d {
				s += q[(i%d)*d+j%d]
			}
			want[i*D+j] = s
			wantY[i] += T[i*D+j] * x[j]
		}
	}
	got, y, tmp := make([]float64, D*D), make([]float64, D), make([]float64, D*D)
	tb.sandwich(got, P, tmp, true, y, x)
	if dd := maxAbsDiff(got, want); dd > 1e-10*float64(D) {
		t.Errorf("sandwich off by %g", dd)
	}
	if dd := maxAbsDiff(y, wantY); dd > 1e-12*float64(D) {
		t.Errorf("T·x off by %g", dd)
	}
	// The unrolled 3×3 block against the general block code.
	gen, yGen := make([]float64, D*D), make([]float64, D)
	for b := len(tb.blk) - 1; b >= 0; b-- {
		bk := tb.blk[b]
		leftBlock(tmp, P, bk.a, bk.o, bk.n, D)
		rightBlock(gen, tmp, bk.a, bk.q, bk.o, bk.n, D)
		mulBlock(yGen, x, bk.a, bk.o, bk.n)
	}
	if dd := maxAbsDiff(got, gen); dd > 1e-12*float64(D) {
		t.Errorf("unrolled blocks differ from the general ones by %g", dd)
	}
	// The transpose, without Q.
	tb.set(a, nil, d, m, true)
	tb.sandwich(got, P, tmp, false, y, x)
	for i := 0; i < D; i++ {
		for j := 0; j < D; j++ {
			var s float64
			for k := 0; k < D; k++ {
				for l := 0; l < D; l++ {
					s += T[k*D+i] * P[k*D+l] * T[l*D+j]
				}
			}
			if math.Abs(got[i*D+j]-s) > 1e-10*float64(D) {
				t.Fatalf("Tᵀ·P·T (%d,%d) = %v, want %v", i, j, got[i*D+j], s)
			}
		}
	}
	// mulSym and downdate.
	for r := 1; r <= 5; r++ {
		U := make([]float64, r*D)
		for i := range U {
			U[i] = rng.NormFloat64()
		}
		c := make([]float64, r*D)
		mulSym(c, U, P, r, D)
		pf := make([]float64, D*D)
		downdate(pf, P, U, r, D)
		for k := 0; k < r; k++ {
			for l := 0; l < D; l++ {
				var s float64
				for j := 0; j < D; j++ {
					s += U[k*D+j] * P[j*D+l]
				}
				if math.Abs(c[k*D+l]-s) > 1e-12*float64(D) {
					t.Fatalf("mulSym r=%d (%d,%d) = %v, want %v", r, k, l, c[k*D+l], s)
				}
			}
		}
		for i := 0; i < D; i++ {
			for j := 0; j < D; j++ {
				s := P[i*D+j]
				for k := 0; k < r; k++ {
					s -= U[k*D+i] * U[k*D+j]
				}
				if math.Abs(pf[i*D+j]-s) > 1e-12*float64(D) || pf[i*D+j] != pf[j*D+i] {
					t.Fatalf("downdate r=%d (%d,%d) = %v, want %v", r, i, j, pf[i*D+j], s)
				}
			}
		}
	}
}

// gridTimes returns two regular grids with a gap, like the paper's
// datasets: their steps agree only up to the rounding of the times.
func gridTimes(n int) []float64 {
	var ts []float64
	for i := 0; i < n; i++ {
		ts = append(ts, -17+float64(i)*(77.0/float64(n-1)))
	}
	for i := 0; i < n; i++ {
		ts = append(ts, 75+float64(i)*(72.0/float64(n-1)))
	}
	return ts
}

// TestRegularGridMatchesDenseGP runs models whose transitions are reused
// across steps equal up to rounding against the dense GP.
func TestRegularGridMatchesDenseGP(t *testing.T) {
	cases := []testCase{
		{"per-product/full-sites", perProductModel(), true},
		{"matern52/indep2/full-sites", indepModel(m52(1.1, 8), 2), true},
		{"matern52/indep2", indepModel(m52(1.1, 8), 2), false},
		{"st/m32+per3 x sep-m32/3 products/full-sites", func(t *testing.T) *Model { return paperSTModel(t, 3, 3) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(12, 5))
			m := tc.model(t)
			times := gridTimes(18)
			s := randomSites(rng, len(times), m.NumProducts(), tc.full, 0.2)
			g := newDenseGP(t, m, times, s)
			var p Posterior
			for _, run := range []func(*Posterior, *Model, []float64, *Sites) error{Smooth, SmoothMarginals} {
				if err := run(&p, m, times, s); err != nil {
					t.Fatal(err)
				}
				checkAgainstDense(t, &p, g, 1e-9)
			}
			if err := Filter(&p, m, times, s); err != nil {
				t.Fatal(err)
			}
			if !relClose(p.LogLik, g.lml, 1e-9) {
				t.Errorf("filter lml %.15g vs dense %.15g", p.LogLik, g.lml)
			}
			// The steps were computed a few times only.
			distinct := map[int]bool{}
			for _, c := range p.chains {
				for _, a := range c.aFrom {
					distinct[a] = true
				}
			}
			if p.chains[0].dim > 2 && len(distinct) > 6 {
				t.Errorf("%d distinct transitions over two regular grids", len(distinct))
			}
		})
	}
}

// whitenRef whitens a full site block as the filter did before, through
// gonum: Cholesky (unless eigen), or the eigendecomposition of a singular
// block. It returns the rows of T over the observed products idx, z and
// log|T|.
func whitenRef(t *testing.T, l1, l2 []float64, np int, eigen bool) (idx []int, T [][]float64, z []float64, logdet float64) {
	for k := 0; k < np; k++ {
		if l2[k*np+k] > 0 {
			idx = append(idx, k)
		}
	}
	q := len(idx)
	if q == 0 {
		return
	}
	sym := mat.NewSymDense(q, nil)
	for a, i := range idx {
		for b, j := range idx {
			sym.SetSym(a, b, l2[i*np+j])
		}
	}
	var ch mat.Cholesky
	if !eigen && ch.Factorize(sym) {
		var L mat.TriDense
		ch.LTo(&L)
		for a := 0; a < q; a++ {
			row := make([]float64, q)
			for b := a; b < q; b++ {
				row[b] = L.At(b, a)
			}
			T = append(T, row)
			v := l1[idx[a]]
			for b := 0; b < a; b++ {
				v -= L.At(a, b) * z[b]
			}
			z = append(z, v/L.At(a, a))
			logdet += math.Log(L.At(a, a))
		}
		return
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		t.Fatal("eigendecomposition failed")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	maxv := 0.0
	for _, v := range vals {
		maxv = math.Max(maxv, v)
	}
	for c, e := range vals {
		if e <= 1e-13*maxv*float64(q) {
			continue
		}
		sq := math.Sqrt(e)
		row := make([]float64, q)
		var zc float64
		for a := range idx {
			row[a] = sq * vecs.At(a, c)
			zc += vecs.At(a, c) * l1[idx[a]]
		}
		T = append(T, row)
		z = append(z, zc/sq)
		logdet += 0.5 * math.Log(e)
	}
	return
}

// TestSingularSitesMatchDense conditions on full sites some of whose
// blocks are singular (rank one with every diagonal entry positive, so
// that the eigendecomposition path whitens them) and compares with the
// dense GP of the equivalent whitened observations.
func TestSingularSitesMatchDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	for _, tc := range []testCase{
		{"per-product", perProductModel(), true},
		{"st/3 products", func(t *testing.T) *Model { return paperSTModel(t, 3, 3) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model(t)
			np := m.NumProducts()
			times := randomTimes(rng, 20, 12)
			n := len(times)
			s := randomSites(rng, n, np, true, 0.15)
			for b := 0; b < n; b += 3 {
				// Λ = v vᵀ·e, λ₁ = c·v: an observation of vᵀf. With small
				// integers and a square e, Cholesky meets an exact zero
				// pivot (an inexact one could pass as tiny and positive).
				l1, l2 := s.Bin(b)
				v := make([]float64, np)
				for k := range v {
					v[k] = float64(1 + rng.IntN(3))
				}
				e, c := float64([]int{1, 4, 9}[rng.IntN(3)]), rng.NormFloat64()
				for i := 0; i < np; i++ {
					l1[i] = c * v[i]
					for j := 0; j < np; j++ {
						l2[i*np+j] = e * v[i] * v[j]
					}
				}
			}
			// Dense whitened observations z = O·f + ε.
			N := n * np
			var rows [][]float64
			var zs []float64
			var logdet float64
			for b := 0; b < n; b++ {
				l1, l2 := s.Bin(b)
				idx, T, z, ld := whitenRef(t, l1, l2, np, false)
				logdet += ld
				for a, row := range T {
					o := make([]float64, N)
					for c, k := range idx {
						o[b*np+k] = row[c]
					}
					rows = append(rows, o)
					zs = append(zs, z[a])
				}
			}
			R := len(rows)
			K := mat.NewSymDense(N, nil)
			for a := 0; a < N; a++ {
				for b := 0; b <= a; b++ {
					K.SetSym(a, b, m.Cov(times[a/np], a%np, times[b/np], b%np))
				}
			}
			O := mat.NewDense(R, N, nil)
			for i, row := range rows {
				O.SetRow(i, row)
			}
			var OK, S mat.Dense
			OK.Mul(O, K)
			S.Mul(&OK, O.T())
			Ssym := mat.NewSymDense(R, nil)
			for i := 0; i < R; i++ {
				for j := 0; j <= i; j++ {
					v := S.At(i, j)
					if i == j {
						v++
					}
					Ssym.SetSym(i, j, v)
				}
			}
			var ch mat.Cholesky
			if !ch.Factorize(Ssym) {
				t.Fatal("dense innovation not positive definite")
			}
			zv := mat.NewVecDense(R, zs)
			var alpha mat.VecDense
			if err := ch.SolveVecTo(&alpha, zv); err != nil {
				t.Fatal(err)
			}
			lml := -0.5*mat.Dot(zv, &alpha) - 0.5*ch.LogDet() - 0.5*float64(R)*log2Pi + logdet
			var mean mat.VecDense
			mean.MulVec(OK.T(), &alpha)
			var sol mat.Dense
			if err := ch.SolveTo(&sol, &OK); err != nil {
				t.Fatal(err)
			}
			var red mat.Dense
			red.Mul(OK.T(), &sol)
			for _, run := range []struct {
				name string
				f    func(*Posterior, *Model, []float64, *Sites) error
			}{{"Smooth", Smooth}, {"SmoothMarginals", SmoothMarginals}} {
				var p Posterior
				if err := run.f(&p, m, times, s); err != nil {
					t.Fatal(err)
				}
				if !relClose(p.LogLik, lml, 1e-9) {
					t.Errorf("%s: lml %.15g, dense %.15g", run.name, p.LogLik, lml)
				}
				for x := 0; x < N; x++ {
					if !relClose(p.Mean[x], mean.AtVec(x), 1e-9) {
						t.Fatalf("%s: mean[%d] %.15g, dense %.15g", run.name, x, p.Mean[x], mean.AtVec(x))
					}
				}
				for b := 0; b < n; b++ {
					for i := 0; i < np; i++ {
						for j := 0; j < np; j++ {
							want := K.At(b*np+i, b*np+j) - red.At(b*np+i, b*np+j)
							if got := p.Cov[(b*np+i)*np+j]; !relClose(got, want, 1e-9) {
								t.Fatalf("%s: cov bin %d (%d,%d) %.15g, dense %.15g", run.name, b, i, j, got, want)
							}
						}
					}
				}
			}
		})
	}
}

// TestExpectedLogSingular compares ExpectedLog on full blocks, singular
// ones included, with its formula through gonum's eigendecomposition.
func TestExpectedLogSingular(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 13))
	for _, np := range []int{2, 3, 5, 10} {
		for _, rank := range []int{1, np - 1, np} {
			if rank < 1 {
				continue
			}
			s := NewSites(1, np, true)
			l1, l2 := s.Bin(0)
			copy(l2, randomSym(rng, np, rank, true))
			v := make([]float64, np)
			for i := range v {
				v[i] = rng.NormFloat64()
			}
			for i := 0; i < np; i++ { // λ₁ in the range of Λ
				for j := 0; j < np; j++ {
					l1[i] += l2[i*np+j] * v[j]
				}
			}
			m := make([]float64, np)
			for i := range m {
				m[i] = rng.NormFloat64()
			}
			P := randomSym(rng, np, np, true)
			got := s.ExpectedLog(0, m, P)
			// Reference.
			_, T, z, logdet := whitenRef(t, l1, l2, np, true)
			// −½(λ₁ᵀΛ⁺λ₁ − 2λ₁ᵀm + mᵀΛm + tr(ΛP)) − (r/2)log 2π + ½ log pdet Λ,
			// where λ₁ᵀΛ⁺λ₁ = |z|² and ½ log pdet Λ = logdet.
			var quad, lm, mLm, tr float64
			for _, x := range z {
				quad += x * x
			}
			for i := 0; i < np; i++ {
				lm += l1[i] * m[i]
				for j := 0; j < np; j++ {
					mLm += m[i] * l2[i*np+j] * m[j]
					tr += l2[i*np+j] * P[j*np+i]
				}
			}
			want := -0.5*(quad-2*lm+mLm+tr) - 0.5*float64(len(T))*log2Pi + logdet
			if !relClose(got, want, 1e-9) {
				t.Errorf("np=%d rank %d: ExpectedLog %.15g, want %.15g", np, rank, got, want)
			}
			if np <= 8 {
				if a := testing.AllocsPerRun(10, func() { s.ExpectedLog(0, m, P) }); a != 0 {
					t.Errorf("np=%d: ExpectedLog allocates %v times", np, a)
				}
			}
		}
	}
}

// TestCloneOwnsStack: a clone of a model with per-product kernels filters
// with its own hyperparameters, and the original with its own.
func TestCloneOwnsStack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 17))
	m := perProductModel()(t)
	times := randomTimes(rng, 25, 10)
	s := randomSites(rng, len(times), m.NumProducts(), true, 0.1)
	var p Posterior
	if err := Filter(&p, m, times, s); err != nil {
		t.Fatal(err)
	}
	before := p.LogLik
	c := m.Clone()
	params := c.Params(nil)
	for i := range params {
		params[i] += 0.3
	}
	if err := c.SetParams(params); err != nil {
		t.Fatal(err)
	}
	if err := Filter(&p, m, times, s); err != nil {
		t.Fatal(err)
	}
	if p.LogLik != before {
		t.Errorf("changing the clone changed the original: lml %v, was %v", p.LogLik, before)
	}
	fresh := perProductModel()(t)
	if err := fresh.SetParams(params); err != nil {
		t.Fatal(err)
	}
	var q Posterior
	if err := Filter(&p, c, times, s); err != nil {
		t.Fatal(err)
	}
	if err := Filter(&q, fresh, times, s); err != nil {
		t.Fatal(err)
	}
	if p.LogLik != q.LogLik || p.LogLik == before {
		t.Errorf("clone lml %v, a model with its hyperparameters %v (original %v)", p.LogLik, q.LogLik, before)
	}
}

// TestRunsDoNotAllocate: repeated runs into the same Posterior allocate
// nothing, for the coupled chain of per-product kernels.
func TestRunsDoNotAllocate(t *testing.T) {
	m, times, s := stackWorkload(t)
	for _, run := range []struct {
		name string
		f    func(*Posterior, *Model, []float64, *Sites) error
	}{{"Filter", Filter}, {"SmoothMarginals", SmoothMarginals}, {"Smooth", Smooth}} {
		var p Posterior
		if err := run.f(&p, m, times, s); err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(5, func() { _ = run.f(&p, m, times, s) }); a != 0 {
			t.Errorf("%s allocates %v times per run", run.name, a)
		}
	}
}

// TestStackBlocks checks the stack's scratch-free block writes against
// its kernels' own matrices.
func TestStackBlocks(t *testing.T) {
	k1, _ := kernel.NewMatern52(1.3, 0.7)
	k2, _ := kernel.NewMatern12(0.4, 2)
	k3, _ := kernel.NewMatern32(2.1, 1.5)
	s := newStack([]kernel.Temporal{k1, k2, k3})
	D := s.Dim()
	for _, c := range []struct {
		name  string
		stack func([]float64)
		kern  func(kernel.Temporal, []float64)
	}{
		{"Transition", func(d []float64) { s.Transition(d, 0.37) }, func(k kernel.Temporal, d []float64) { k.Transition(d, 0.37) }},
		{"ProcessNoise", func(d []float64) { s.ProcessNoise(d, 0.37) }, func(k kernel.Temporal, d []float64) { kernel.ProcessNoise(k, d, 0.37, nil) }},
		{"Stationary", s.Stationary, kernel.Temporal.Stationary},
		{"Drift", s.Drift, kernel.Temporal.Drift},
		{"Diffusion", s.Diffusion, kernel.Temporal.Diffusion},
	} {
		got := make([]float64, D*D)
		for i := range got {
			got[i] = math.NaN()
		}
		c.stack(got)
		o := 0
		for _, k := range s.ks {
			d := k.Dim()
			want := make([]float64, d*d)
			c.kern(k, want)
			for i := 0; i < D; i++ {
				for j := o; j < o+d; j++ {
					w := 0.0
					if i >= o && i < o+d {
						w = want[(i-o)*d+j-o]
					}
					if got[i*D+j] != w {
						t.Fatalf("%s (%d,%d) = %v, want %v", c.name, i, j, got[i*D+j], w)
					}
				}
			}
			o += d
		}
	}
}

// supportedRows returns r random rows of length D that are non-zero only
// on the columns sup, in full (r×D) and restricted to sup (r×len(sup)).
func supportedRows(rng *rand.Rand, r, D int, sup []int) (full, onSup []float64) {
	ns := len(sup)
	full, onSup = make([]float64, r*D), make([]float64, r*ns)
	for k := 0; k < r; k++ {
		for e, j := range sup {
			v := rng.NormFloat64()
			full[k*D+j], onSup[k*ns+e] = v, v
		}
	}
	return full, onSup
}
