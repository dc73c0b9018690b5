package kernel

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/internal/mathx"
	"gonum.org/v1/gonum/mat"
)

// ktCase is one temporal kernel for the shared suite.
type ktCase struct {
	name string
	make func() (Temporal, error)
}

// ktCases lists every Temporal implementation, including nested
// combinations, with hyperparameters whose time scales (~1) keep the
// generic matrix exponentials of the suite well conditioned over the
// test steps.
func ktCases() []ktCase {
	return []ktCase{
		{"Matern12", func() (Temporal, error) { return NewMatern12(1.3, 0.8) }},
		{"Matern32", func() (Temporal, error) { return NewMatern32(1.3, 0.7) }},
		{"Matern52", func() (Temporal, error) { return NewMatern52(0.8, 2.0) }},
		{"Periodic/J=3", func() (Temporal, error) { return NewPeriodic(1.0, 1.0, 2.5, 3) }},
		{"Periodic/J=6,short", func() (Temporal, error) { return NewPeriodic(0.7, 0.5, 1.3, 6) }},
		{"QuasiPeriodic12", func() (Temporal, error) { return NewQuasiPeriodic(1.1, 1.0, 2.5, 3.0, 3, 12) }},
		{"QuasiPeriodic32", func() (Temporal, error) { return NewQuasiPeriodic(1.1, 0.8, 2.5, 3.0, 3, 32) }},
		{"QuasiPeriodic52", func() (Temporal, error) { return NewQuasiPeriodic(0.9, 1.2, 3.1, 2.0, 2, 52) }},
		{"Sum(Matern32,Periodic)", func() (Temporal, error) {
			a, _ := NewMatern32(1.3, 0.7)
			b, _ := NewPeriodic(1.0, 1.0, 2.5, 3)
			return NewSum(a, b)
		}},
		{"Product(Matern52,Matern12)", func() (Temporal, error) {
			a, _ := NewMatern52(0.8, 2.0)
			b, _ := NewMatern12(1.2, 3.0)
			return NewProduct(a, b)
		}},
		{"Product(Periodic,Matern32)", func() (Temporal, error) {
			a, _ := NewPeriodic(1.0, 1.0, 2.5, 2)
			b, _ := NewMatern32(1.0, 3.0)
			return NewProduct(a, b)
		}},
		{"Sum(Product(Matern12,Matern32),Matern52,Matern12)", func() (Temporal, error) {
			a, _ := NewMatern12(0.5, 1.5)
			b, _ := NewMatern32(2.0, 2.5)
			p, err := NewProduct(a, b)
			if err != nil {
				return nil, err
			}
			c, _ := NewMatern52(0.3, 1.1)
			return NewSum(p, c, a)
		}},
	}
}

// ktMats holds a kernel's matrices as gonum values for the checks.
type ktMats struct {
	d       int
	h       []float64
	f, pinf *mat.Dense
	diff    *mat.Dense
}

func ktMatrices(k Temporal) ktMats {
	d := k.Dim()
	m := ktMats{d: d, h: make([]float64, d)}
	k.Measurement(m.h)
	buf := func(fill func([]float64)) *mat.Dense {
		b := make([]float64, d*d)
		fill(b)
		return mat.NewDense(d, d, b)
	}
	m.f = buf(k.Drift)
	m.pinf = buf(k.Stationary)
	m.diff = buf(k.Diffusion)
	return m
}

// ktMaxAbs returns max |a_ij|.
func ktMaxAbs(a mat.Matrix) float64 {
	r, c := a.Dims()
	var m float64
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			m = math.Max(m, math.Abs(a.At(i, j)))
		}
	}
	return m
}

// ktMaxDiff returns max |a_ij − b_ij|.
func ktMaxDiff(a, b mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(a, b)
	return ktMaxAbs(&d)
}

var (
	ktTaus = []float64{0, 0.05, 0.3, 1.1, 2.7}
	ktDts  = []float64{0, 0.01, 0.3, 1.1, 2.0}
)

// TestTemporalSuite runs the same checks over every Temporal
// implementation.
func TestTemporalSuite(t *testing.T) {
	for _, c := range ktCases() {
		t.Run(c.name, func(t *testing.T) {
			k, err := c.make()
			if err != nil {
				t.Fatal(err)
			}
			ktCheckCov(t, k)
			ktCheckExpm(t, k)
			ktCheckLyapunov(t, k)
			ktCheckVanLoan(t, k)
			ktCheckNoiseSymPSD(t, k)
			ktCheckParams(t, c)
			ktCheckClone(t, k)
			ktCheckNoAlloc(t, k)
		})
	}
}

// ktCheckCov: H A(τ) Pinf Hᵀ = Cov(τ) to 1e-12 relative, and Cov is even.
func ktCheckCov(t *testing.T, k Temporal) {
	t.Helper()
	m := ktMatrices(k)
	d := m.d
	a := make([]float64, d*d)
	h := mat.NewVecDense(d, m.h)
	for _, tau := range ktTaus {
		k.Transition(a, tau)
		var ap mat.Dense
		ap.Mul(mat.NewDense(d, d, a), m.pinf)
		got := mat.Inner(h, &ap, h)
		want := k.Cov(tau)
		if ktRelErr(got, want) > 1e-12 {
			t.Errorf("τ=%g: H A Pinf Hᵀ = %.17g, Cov = %.17g (rel %.2g > 1e-12)", tau, got, want, ktRelErr(got, want))
		}
		if k.Cov(-tau) != want {
			t.Errorf("Cov(−%g) = %g ≠ Cov(%g) = %g", tau, k.Cov(-tau), tau, want)
		}
	}
}

// ktCheckExpm: A(dt) = expm(F dt) (gonum) to 1e-10 of max |A|.
func ktCheckExpm(t *testing.T, k Temporal) {
	t.Helper()
	m := ktMatrices(k)
	d := m.d
	a := make([]float64, d*d)
	for _, dt := range ktDts {
		k.Transition(a, dt)
		var fdt, want mat.Dense
		fdt.Scale(dt, m.f)
		want.Exp(&fdt)
		if e := ktMaxDiff(mat.NewDense(d, d, a), &want); e > 1e-10*ktMaxAbs(&want) {
			t.Errorf("dt=%g: max |A − expm(F dt)| = %.3g > 1e-10·%.3g", dt, e, ktMaxAbs(&want))
		}
	}
}

// ktCheckLyapunov: F Pinf + Pinf Fᵀ + Diffusion = 0 to 1e-10·max|F|·max|Pinf|.
func ktCheckLyapunov(t *testing.T, k Temporal) {
	t.Helper()
	m := ktMatrices(k)
	var fp, res mat.Dense
	fp.Mul(m.f, m.pinf)
	res.Add(&fp, fp.T())
	res.Add(&res, m.diff)
	scale := ktMaxAbs(m.f) * ktMaxAbs(m.pinf)
	if e := ktMaxAbs(&res); e > 1e-10*scale {
		t.Errorf("max |F Pinf + Pinf Fᵀ + D| = %.3g > 1e-10·%.3g", e, scale)
	}
}

// ktVanLoan returns Q(dt) = ∫₀^dt e^{Fs} D e^{Fᵀs} ds by Van Loan's method
// (1978): expm([[−F, D], [0, Fᵀ]]·dt) = [[Φ11, Φ12], [0, Φ22]] and
// Q = Φ22ᵀ Φ12.
func ktVanLoan(m ktMats, dt float64) *mat.Dense {
	d := m.d
	c := mat.NewDense(2*d, 2*d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			c.Set(i, j, -m.f.At(i, j)*dt)
			c.Set(i, d+j, m.diff.At(i, j)*dt)
			c.Set(d+i, d+j, m.f.At(j, i)*dt)
		}
	}
	var phi mat.Dense
	phi.Exp(c)
	var q mat.Dense
	q.Mul(phi.Slice(d, 2*d, d, 2*d).T(), phi.Slice(0, d, d, 2*d))
	return &q
}

// ktCheckVanLoan: ProcessNoise(dt) equals the Van Loan integral to 1e-9 of
// its size (exactly, for the noise-free periodic kernel).
func ktCheckVanLoan(t *testing.T, k Temporal) {
	t.Helper()
	m := ktMatrices(k)
	d := m.d
	q := make([]float64, d*d)
	for _, dt := range ktDts {
		ProcessNoise(k, q, dt, nil)
		want := ktVanLoan(m, dt)
		if e := ktMaxDiff(mat.NewDense(d, d, q), want); e > 1e-9*ktMaxAbs(want) {
			t.Errorf("dt=%g: max |Q − Q_VanLoan| = %.3g > 1e-9·%.3g", dt, e, ktMaxAbs(want))
		}
	}
}

// ktCheckNoiseSymPSD: Q(dt) and Pinf are symmetric to 1e-15 and positive
// semidefinite to −1e-12, both relative to max |Pinf|.
func ktCheckNoiseSymPSD(t *testing.T, k Temporal) {
	t.Helper()
	m := ktMatrices(k)
	d := m.d
	scale := ktMaxAbs(m.pinf)
	q := make([]float64, d*d)
	check := func(what string, a *mat.Dense) {
		if e := ktMaxDiff(a, a.T()); e > 1e-15*scale {
			t.Errorf("%s: asymmetry %.3g > 1e-15·%.3g", what, e, scale)
		}
		var sym mat.SymDense
		sym.SymOuterK(0, a) // allocate d×d
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				sym.SetSym(i, j, 0.5*(a.At(i, j)+a.At(j, i)))
			}
		}
		var eig mat.EigenSym
		if !eig.Factorize(&sym, false) {
			t.Errorf("%s: eigendecomposition failed", what)
			return
		}
		if lo := eig.Values(nil)[0]; lo < -1e-12*scale {
			t.Errorf("%s: smallest eigenvalue %.3g < −1e-12·%.3g", what, lo, scale)
		}
	}
	check("Pinf", m.pinf)
	for _, dt := range append(ktDts, 7.5, 40) {
		ProcessNoise(k, q, dt, nil)
		check(fmt.Sprintf("Q(%g)", dt), mat.NewDense(d, d, q))
	}
}

// ktSnapshot records a kernel's observable state bit for bit.
func ktSnapshot(k Temporal) []float64 {
	d := k.Dim()
	s := k.Params(nil)
	for _, tau := range ktTaus {
		s = append(s, k.Cov(tau))
	}
	buf := make([]float64, d*d)
	k.Transition(buf, 0.7)
	s = append(s, buf...)
	k.Stationary(buf)
	s = append(s, buf...)
	ProcessNoise(k, buf, 0.7, nil)
	return append(s, buf...)
}

func ktSameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// ktCheckParams: names match NumParams and are unique; Params → SetParams
// round-trips to 1e-12 (softplus and its inverse are not exact inverses in
// floating point); bad input is rejected and leaves the kernel unchanged.
func ktCheckParams(t *testing.T, c ktCase) {
	t.Helper()
	k, _ := c.make()
	n := k.NumParams()
	names := k.ParamNames()
	if len(names) != n {
		t.Fatalf("%d names for %d parameters", len(names), n)
	}
	seen := map[string]bool{}
	for _, nm := range names {
		if seen[nm] {
			t.Errorf("duplicate parameter name %q", nm)
		}
		seen[nm] = true
	}
	p := k.Params(nil)
	if len(p) != n {
		t.Fatalf("Params(nil) has length %d, want %d", len(p), n)
	}
	if q := k.Params(make([]float64, n)); !ktSameBits(p, q) {
		t.Errorf("Params(dst) = %v, Params(nil) = %v", q, p)
	}
	fresh, _ := c.make()
	if err := fresh.SetParams(p); err != nil {
		t.Fatalf("SetParams(Params()): %v", err)
	}
	for i, v := range fresh.Params(nil) {
		if ktRelErr(v, p[i]) > 1e-12 {
			t.Errorf("param %s: round trip %.17g → %.17g", names[i], p[i], v)
		}
	}
	for _, tau := range ktTaus {
		if ktRelErr(fresh.Cov(tau), k.Cov(tau)) > 1e-12 {
			t.Errorf("Cov(%g) after round trip: %.17g, before %.17g", tau, fresh.Cov(tau), k.Cov(tau))
		}
	}
	before := ktSnapshot(k)
	bad := [][]float64{nil, make([]float64, n+1)}
	for i := 0; i < n; i++ {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			b := append([]float64(nil), p...)
			b[i] = v
			bad = append(bad, b)
		}
	}
	for _, b := range bad {
		if len(b) == n && n == 0 {
			continue
		}
		err := k.SetParams(b)
		if err == nil {
			t.Errorf("SetParams(%v) accepted", b)
		} else if !strings.HasPrefix(err.Error(), "kernel: ") {
			t.Errorf("SetParams error %q lacks the \"kernel: \" prefix", err)
		}
		if !ktSameBits(before, ktSnapshot(k)) {
			t.Errorf("SetParams(%v) failed but changed the kernel", b)
		}
	}
}

// ktCheckClone: a clone matches its original bit for bit, and changing
// the clone's hyperparameters leaves the original untouched.
func ktCheckClone(t *testing.T, k Temporal) {
	t.Helper()
	before := ktSnapshot(k)
	c := k.Clone()
	if !ktSameBits(before, ktSnapshot(c)) {
		t.Fatal("clone differs from original")
	}
	p := c.Params(nil)
	for i := range p {
		p[i] += 0.25
	}
	if err := c.SetParams(p); err != nil {
		t.Fatal(err)
	}
	if !ktSameBits(before, ktSnapshot(k)) {
		t.Error("changing the clone changed the original")
	}
	if c.Cov(0.3) == k.Cov(0.3) {
		t.Error("changing the clone's parameters did not change its covariance")
	}
}

// ktCheckNoAlloc: Transition and ProcessNoise allocate nothing.
func ktCheckNoAlloc(t *testing.T, k Temporal) {
	t.Helper()
	d := k.Dim()
	dst := make([]float64, d*d)
	work := make([]float64, 3*d*d)
	if n := testing.AllocsPerRun(20, func() { k.Transition(dst, 0.4) }); n != 0 {
		t.Errorf("Transition allocates %v times", n)
	}
	if n := testing.AllocsPerRun(20, func() { ProcessNoise(k, dst, 0.4, work) }); n != 0 {
		t.Errorf("ProcessNoise allocates %v times", n)
	}
}

// TestStateSpaceGolden checks the closed forms against scipy's expm of F
// (testdata/state_space.json, copied from the shared golden files).
func TestStateSpaceGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/state_space.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Kernel     string
			Dt         float64
			A, Q, Pinf [][]float64
			KDt        float64 `json:"k_dt"`
		}
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) == 0 {
		t.Fatal("no cases")
	}
	kernels := map[string]func() (Temporal, error){
		"matern32 s=1.3 l=0.7":      func() (Temporal, error) { return NewMatern32(1.3, 0.7) },
		"matern52 s=0.8 l=2.0":      func() (Temporal, error) { return NewMatern52(0.8, 2.0) },
		"periodic s=1 l=1 p=50 J=3": func() (Temporal, error) { return NewPeriodic(1, 1, 50, 3) },
	}
	const tol = 1e-12
	for _, c := range g.Cases {
		mk, ok := kernels[c.Kernel]
		if !ok {
			t.Errorf("golden kernel %q has no constructor here", c.Kernel)
			continue
		}
		k, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		d := k.Dim()
		dense := func(rows [][]float64) *mat.Dense {
			m := mat.NewDense(d, d, nil)
			for i, r := range rows {
				for j, v := range r {
					m.Set(i, j, v)
				}
			}
			return m
		}
		buf := make([]float64, d*d)
		k.Transition(buf, c.Dt)
		want := dense(c.A)
		if e := ktMaxDiff(mat.NewDense(d, d, buf), want); e > tol*ktMaxAbs(want) {
			t.Errorf("%s dt=%g: max |A − golden| = %.3g", c.Kernel, c.Dt, e)
		}
		k.Stationary(buf)
		pinf := dense(c.Pinf)
		if e := ktMaxDiff(mat.NewDense(d, d, buf), pinf); e > tol*ktMaxAbs(pinf) {
			t.Errorf("%s: max |Pinf − golden| = %.3g", c.Kernel, e)
		}
		// The golden Q is Pinf − A Pinf Aᵀ by subtraction, so it carries
		// rounding of the size of Pinf: compare on that scale.
		ProcessNoise(k, buf, c.Dt, nil)
		if e := ktMaxDiff(mat.NewDense(d, d, buf), dense(c.Q)); e > tol*ktMaxAbs(pinf) {
			t.Errorf("%s dt=%g: max |Q − golden| = %.3g", c.Kernel, c.Dt, e)
		}
		if got := k.Cov(c.Dt); ktRelErr(got, c.KDt) > tol {
			t.Errorf("%s: Cov(%g) = %.17g, golden %.17g", c.Kernel, c.Dt, got, c.KDt)
		}
	}
}

// TestPeriodicExactCov checks ExactCov against the definition and the
// truncated series' convergence to it.
func TestPeriodicExactCov(t *testing.T) {
	k, err := NewPeriodic(1.7, 1.0, 3.0, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, tau := range []float64{0, 0.4, 1.5, 2.9, 3, 17.2} {
		s := math.Sin(math.Pi * tau / 3)
		want := 1.7 * math.Exp(-2*s*s)
		if got := k.ExactCov(tau); ktRelErr(got, want) > 1e-14 {
			t.Errorf("ExactCov(%g) = %.17g, want %.17g", tau, got, want)
		}
		// With J = 20 at ℓ = 1 the neglected weights are below 1e-30.
		if got := k.Cov(tau); ktRelErr(got, want) > 1e-14 {
			t.Errorf("Cov(%g) with J=20 = %.17g, exact %.17g", tau, got, want)
		}
	}
	// Truncation loses Σ_{j>J} q_j² of the variance: ~8% for ℓ = 0.5, J = 3.
	short, _ := NewPeriodic(1, 0.5, 1, 3)
	if got := short.Cov(0); math.Abs(got-0.922005) > 5e-7 {
		t.Errorf("ℓ=0.5, J=3: truncated variance %.7f, want 0.922005", got)
	}
	if short.ExactCov(0) != 1 {
		t.Errorf("ExactCov(0) = %g, want the variance 1", short.ExactCov(0))
	}
	// Reducing the lag modulo the period keeps A exactly periodic.
	a, b := make([]float64, 64), make([]float64, 64)
	k2, _ := NewPeriodic(1, 1, 0.25, 3)
	k2.Transition(a, 0.1)
	k2.Transition(b, 0.1+1e6*0.25)
	if e := ktMaxDiff(mat.NewDense(8, 8, a), mat.NewDense(8, 8, b)); e > 1e-9 {
		t.Errorf("A(dt + 1e6 p) − A(dt) = %.3g", e)
	}
}

// TestQuasiPeriodicCov checks the quasi-periodic kernel against the product
// of its factors.
func TestQuasiPeriodicCov(t *testing.T) {
	for _, c := range []struct {
		order  int
		matern func(s, l float64) (Temporal, error)
	}{
		{12, func(s, l float64) (Temporal, error) { return NewMatern12(s, l) }},
		{32, func(s, l float64) (Temporal, error) { return NewMatern32(s, l) }},
		{52, func(s, l float64) (Temporal, error) { return NewMatern52(s, l) }},
	} {
		q, err := NewQuasiPeriodic(1.4, 0.9, 2.2, 3.5, 4, c.order)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := NewPeriodic(1, 0.9, 2.2, 4)
		m, _ := c.matern(1.4, 3.5)
		prod, _ := NewProduct(p, m)
		for _, tau := range ktTaus {
			want := m.Cov(tau) * p.Cov(tau)
			if ktRelErr(q.Cov(tau), want) > 1e-14 {
				t.Errorf("order %d: Cov(%g) = %.17g, want %.17g", c.order, tau, q.Cov(tau), want)
			}
			if ktRelErr(prod.Cov(tau), want) > 1e-14 {
				t.Errorf("order %d: Product Cov(%g) = %.17g, want %.17g", c.order, tau, prod.Cov(tau), want)
			}
			want = m.Cov(tau) * p.ExactCov(tau)
			if ktRelErr(q.ExactCov(tau), want) > 1e-14 {
				t.Errorf("order %d: ExactCov(%g) = %.17g, want %.17g", c.order, tau, q.ExactCov(tau), want)
			}
		}
		if q.Dim() != prod.Dim() {
			t.Errorf("order %d: Dim %d, product %d", c.order, q.Dim(), prod.Dim())
		}
	}
}

// TestCombinatorStructure checks the layout promised by Sum and Product.
func TestCombinatorStructure(t *testing.T) {
	a, _ := NewMatern32(1.3, 0.7)
	b, _ := NewPeriodic(1, 1, 2.5, 1)
	s, err := NewSum(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dim() != 6 || s.NumParams() != 5 {
		t.Fatalf("Sum: Dim %d, NumParams %d", s.Dim(), s.NumParams())
	}
	wantNames := []string{"0.variance", "0.lengthscale", "1.variance", "1.lengthscale", "1.period"}
	if got := s.ParamNames(); fmt.Sprint(got) != fmt.Sprint(wantNames) {
		t.Errorf("Sum names %v, want %v", got, wantNames)
	}
	h := make([]float64, 6)
	s.Measurement(h)
	if fmt.Sprint(h) != "[1 0 1 0 1 0]" {
		t.Errorf("Sum H = %v", h)
	}
	// Block-diagonal A with zero off-diagonal blocks, even when dst held
	// garbage.
	dst := make([]float64, 36)
	for i := range dst {
		dst[i] = math.NaN()
	}
	s.Transition(dst, 0.3)
	aa, ab := make([]float64, 4), make([]float64, 16)
	a.Transition(aa, 0.3)
	b.Transition(ab, 0.3)
	for i := 0; i < 6; i++ {
		for j := 0; j < 6; j++ {
			want := 0.0
			switch {
			case i < 2 && j < 2:
				want = aa[i*2+j]
			case i >= 2 && j >= 2:
				want = ab[(i-2)*4+j-2]
			}
			if dst[i*6+j] != want {
				t.Errorf("Sum A[%d,%d] = %g, want %g", i, j, dst[i*6+j], want)
			}
		}
	}
	// The sum owns copies of its components.
	pa := a.Params(nil)
	pa[0] += 1
	_ = a.SetParams(pa)
	if s.Cov(0) != 1.3+b.Cov(0) {
		t.Errorf("Sum.Cov(0) = %g changed with the argument kernel", s.Cov(0))
	}
	// The same kernel twice is two independent components.
	s2, _ := NewSum(a, a)
	p := s2.Params(nil)
	p[0] = mathx.SoftplusInv(5)
	if err := s2.SetParams(p); err != nil {
		t.Fatal(err)
	}
	if got, want := s2.Cov(0), 5+a.Variance(); ktRelErr(got, want) > 1e-14 {
		t.Errorf("Sum(a, a) after changing component 0: Cov(0) = %g, want %g", got, want)
	}

	m1, _ := NewMatern12(2, 1)
	pr, err := NewProduct(a, m1)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Dim() != 2 || fmt.Sprint(pr.ParamNames()) != "[0.variance 0.lengthscale 1.variance 1.lengthscale]" {
		t.Errorf("Product: Dim %d, names %v", pr.Dim(), pr.ParamNames())
	}
}

// TestKernelConstructorErrors checks that invalid arguments are rejected
// with an error (never a panic).
func TestKernelConstructorErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	m, _ := NewMatern32(1, 1)
	for _, c := range []struct {
		name string
		make func() (Temporal, error)
	}{
		{"periodic variance 0", func() (Temporal, error) { return NewPeriodic(0, 1, 1, 3) }},
		{"periodic variance <0", func() (Temporal, error) { return NewPeriodic(-1, 1, 1, 3) }},
		{"periodic lengthscale 0", func() (Temporal, error) { return NewPeriodic(1, 0, 1, 3) }},
		{"periodic lengthscale NaN", func() (Temporal, error) { return NewPeriodic(1, nan, 1, 3) }},
		{"periodic lengthscale Inf", func() (Temporal, error) { return NewPeriodic(1, inf, 1, 3) }},
		{"periodic lengthscale underflows", func() (Temporal, error) { return NewPeriodic(1, 1e-200, 1, 3) }},
		{"periodic period 0", func() (Temporal, error) { return NewPeriodic(1, 1, 0, 3) }},
		{"periodic period NaN", func() (Temporal, error) { return NewPeriodic(1, 1, nan, 3) }},
		{"periodic harmonics 0", func() (Temporal, error) { return NewPeriodic(1, 1, 1, 0) }},
		{"periodic harmonics <0", func() (Temporal, error) { return NewPeriodic(1, 1, 1, -2) }},
		{"periodic harmonics too many", func() (Temporal, error) { return NewPeriodic(1, 1, 1, MaxHarmonics+1) }},
		{"quasi-periodic order 22", func() (Temporal, error) { return NewQuasiPeriodic(1, 1, 1, 1, 3, 22) }},
		{"quasi-periodic harmonics 0", func() (Temporal, error) { return NewQuasiPeriodic(1, 1, 1, 1, 0, 32) }},
		{"quasi-periodic matern lengthscale <0", func() (Temporal, error) { return NewQuasiPeriodic(1, 1, 1, -1, 3, 32) }},
		{"quasi-periodic period NaN", func() (Temporal, error) { return NewQuasiPeriodic(1, 1, nan, 1, 3, 12) }},
		{"quasi-periodic variance Inf", func() (Temporal, error) { return NewQuasiPeriodic(inf, 1, 1, 1, 3, 12) }},
		{"matern lengthscale 0", func() (Temporal, error) { return NewMatern32(1, 0) }},
		{"matern variance NaN", func() (Temporal, error) { return NewMatern52(nan, 1) }},
		{"empty sum", func() (Temporal, error) { return NewSum() }},
		{"sum with nil", func() (Temporal, error) { return NewSum(m, nil) }},
		{"product nil a", func() (Temporal, error) { return NewProduct(nil, m) }},
		{"product nil b", func() (Temporal, error) { return NewProduct(m, nil) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := c.make()
			if err == nil {
				t.Fatalf("accepted, got %v", k)
			}
			if !strings.HasPrefix(err.Error(), "kernel: ") {
				t.Errorf("error %q lacks the \"kernel: \" prefix", err)
			}
			if k != nil && !ktIsNilKernel(k) {
				t.Errorf("returned a kernel with the error: %v", k)
			}
		})
	}
}

// ktIsNilKernel reports whether k is an interface holding a nil pointer (the
// constructors return typed nils, which the test wraps in Temporal).
func ktIsNilKernel(k Temporal) bool {
	switch v := k.(type) {
	case *Periodic:
		return v == nil
	case *QuasiPeriodic:
		return v == nil
	case *Sum:
		return v == nil
	case *Product:
		return v == nil
	case *Matern12:
		return v == nil
	case *Matern32:
		return v == nil
	case *Matern52:
		return v == nil
	}
	return false
}

// TestAccessors: every kernel reads back the hyperparameters it was built
// with, and the combinators hand out their components themselves (not
// copies), which cvi's learning walks to find lengthscales and periods.
func TestAccessors(t *testing.T) {
	m12, _ := NewMatern12(1.5, 2)
	m52, _ := NewMatern52(0.5, 3)
	p, _ := NewPeriodic(2, 0.8, 24, 5)
	qp, _ := NewQuasiPeriodic(3, 0.9, 12, 40, 4, 32)
	if m12.Variance() != 1.5 || m12.Lengthscale() != 2 || m52.Variance() != 0.5 || m52.Lengthscale() != 3 {
		t.Errorf("Matérn accessors: %v %v %v %v", m12.Variance(), m12.Lengthscale(), m52.Variance(), m52.Lengthscale())
	}
	if p.Variance() != 2 || p.Lengthscale() != 0.8 || p.Period() != 24 || p.Harmonics() != 5 {
		t.Errorf("Periodic accessors: %v %v %v %v", p.Variance(), p.Lengthscale(), p.Period(), p.Harmonics())
	}
	if qp.Variance() != 3 || qp.Lengthscale() != 0.9 || qp.Period() != 12 || qp.MaternLengthscale() != 40 || qp.MaternOrder() != 32 || qp.Harmonics() != 4 {
		t.Errorf("QuasiPeriodic accessors: %v %v %v %v %v %v", qp.Variance(), qp.Lengthscale(), qp.Period(), qp.MaternLengthscale(), qp.MaternOrder(), qp.Harmonics())
	}
	s, _ := NewSum(m12, p)
	if s.Len() != 2 || s.Component(-1) != nil || s.Component(2) != nil {
		t.Fatalf("Sum: Len %d, out-of-range components %v, %v", s.Len(), s.Component(-1), s.Component(2))
	}
	c0, ok := s.Component(0).(*Matern12)
	if !ok || c0 == m12 || c0.Variance() != 1.5 {
		t.Fatalf("Sum.Component(0) = %v, want the sum's own copy of the Matérn-1/2", s.Component(0))
	}
	// The component is the sum's own: changing it changes the sum.
	if err := c0.SetParams([]float64{mathx.SoftplusInv(4), mathx.SoftplusInv(2)}); err != nil {
		t.Fatal(err)
	}
	if got := s.Params(nil)[0]; got != mathx.SoftplusInv(4) {
		t.Errorf("Sum params after changing component 0: %v", got)
	}
	pr, _ := NewProduct(m52, p)
	a, b := pr.Factors()
	if _, ok := a.(*Matern52); !ok || a == Temporal(m52) {
		t.Errorf("Product.Factors a = %T, want the product's own Matérn-5/2", a)
	}
	if bp, ok := b.(*Periodic); !ok || bp.Period() != 24 {
		t.Errorf("Product.Factors b = %v, want the periodic factor", b)
	}
}
