package kernel

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/internal/geo"
	"gonum.org/v1/gonum/mat"
)

// skCase is one spatial kernel with features it accepts.
type skCase struct {
	name     string
	make     func() (Spatial, error)
	features func(rng *rand.Rand, n int) [][]float64
}

func skUniform(dim int, lo, hi float64) func(*rand.Rand, int) [][]float64 {
	return func(rng *rand.Rand, n int) [][]float64 {
		f := make([][]float64, n)
		for i := range f {
			f[i] = make([]float64, dim)
			for j := range f[i] {
				f[i][j] = lo + (hi-lo)*rng.Float64()
			}
		}
		return f
	}
}

// skLatLon draws points in a latitude/longitude box (degrees).
func skLatLon(lat0, lat1, lon0, lon1 float64) func(*rand.Rand, int) [][]float64 {
	return func(rng *rand.Rand, n int) [][]float64 {
		f := make([][]float64, n)
		for i := range f {
			f[i] = []float64{lat0 + (lat1-lat0)*rng.Float64(), lon0 + (lon1-lon0)*rng.Float64()}
		}
		return f
	}
}

func skCases() []skCase {
	m32 := func(s, l float64) Spatial { k, _ := NewMaternSpatial(32, Euclidean, s, l); return k }
	return []skCase{
		{"Independent", func() (Spatial, error) { return Independent{}, nil }, skUniform(2, 0, 1)},
		{"Matern12/ARD", func() (Spatial, error) { return NewMaternSpatial(12, Euclidean, 1.5, 0.3, 0.7) }, skUniform(2, 0, 1)},
		{"Matern32/ARD", func() (Spatial, error) { return NewMaternSpatial(32, Euclidean, 0.8, 0.4, 0.2) }, skUniform(2, 0, 1)},
		{"Matern52/1D", func() (Spatial, error) { return NewMaternSpatial(52, Euclidean, 2.0, 0.25) }, skUniform(1, 0, 1)},
		{"RBF/ARD3", func() (Spatial, error) { return NewRBF(Euclidean, 1.2, 0.5, 1.0, 2.0) }, skUniform(3, -1, 1)},
		{"Matern32/GreatCircle/NYC", func() (Spatial, error) { return NewMaternSpatial(32, GreatCircle, 1.0, 2000) },
			skLatLon(40.6, 40.9, -74.1, -73.8)},
		{"Matern12/GreatCircle/global", func() (Spatial, error) { return NewMaternSpatial(12, GreatCircle, 1.0, 3e6) },
			skLatLon(-90, 90, -180, 180)},
		{"RBF/Chordal/global", func() (Spatial, error) { return NewRBF(Chordal, 0.5, 2e6) }, skLatLon(-90, 90, -180, 180)},
		{"Separable(M32,M32)", func() (Spatial, error) { return NewSeparable(m32(1.1, 0.3), m32(0.9, 0.6)) }, skUniform(2, 0, 1)},
		{"Separable(GreatCircle,M12)", func() (Spatial, error) {
			g, _ := NewMaternSpatial(52, GreatCircle, 1.0, 5000)
			m, _ := NewMaternSpatial(12, Euclidean, 2.0, 3.0)
			return NewSeparable(g, m)
		}, func(rng *rand.Rand, n int) [][]float64 {
			f := skLatLon(51.3, 51.7, -0.5, 0.3)(rng, n)
			for i := range f {
				f[i] = append(f[i], 10*rng.Float64())
			}
			return f
		}},
	}
}

// TestSpatialSuite runs the same checks over every Spatial implementation.
func TestSpatialSuite(t *testing.T) {
	for _, c := range skCases() {
		t.Run(c.name, func(t *testing.T) {
			k, err := c.make()
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(7))
			feats := c.features(rng, 40)
			skCheckGram(t, k, feats)
			skCheckParams(t, c, feats)
			skCheckBadFeatures(t, k, feats)
		})
	}
}

// skCheckGram: the Gram matrix is exactly symmetric, has Cov on every entry
// (identity for Independent), and is positive definite: gonum's Cholesky
// succeeds after adding 1e-10·max diagonal.
func skCheckGram(t *testing.T, k Spatial, feats [][]float64) {
	t.Helper()
	n := len(feats)
	g := make([]float64, n*n)
	if err := k.Gram(g, feats); err != nil {
		t.Fatal(err)
	}
	_, indep := k.(Independent)
	var diag float64
	for i := 0; i < n; i++ {
		diag = math.Max(diag, g[i*n+i])
		for j := 0; j < n; j++ {
			if g[i*n+j] != g[j*n+i] {
				t.Fatalf("Gram[%d,%d] = %g ≠ Gram[%d,%d] = %g", i, j, g[i*n+j], j, i, g[j*n+i])
			}
			want := k.Cov(feats[i], feats[j])
			if indep && i != j {
				want = 0
			}
			if ktRelErr(g[i*n+j], want) > 1e-15 {
				t.Fatalf("Gram[%d,%d] = %.17g, Cov = %.17g", i, j, g[i*n+j], want)
			}
		}
	}
	sym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := g[i*n+j]
			if i == j {
				v += 1e-10 * diag
			}
			sym.SetSym(i, j, v)
		}
	}
	var chol mat.Cholesky
	if !chol.Factorize(sym) {
		t.Error("Gram matrix is not positive definite (Cholesky failed with 1e-10 jitter)")
	}
	// A destination longer than n² is fine; only the first n² are written.
	long := make([]float64, n*n+3)
	long[n*n] = 42
	if err := k.Gram(long, feats); err != nil || long[n*n] != 42 {
		t.Errorf("Gram into a longer dst: err %v, wrote past n²: %v", err, long[n*n] != 42)
	}
	if err := k.Gram(nil, nil); err != nil {
		t.Errorf("Gram of no features: %v", err)
	}
}

// skCheckParams: names match NumParams; Params → SetParams round-trips;
// bad values are rejected leaving the kernel unchanged; clones are
// independent.
func skCheckParams(t *testing.T, c skCase, feats [][]float64) {
	t.Helper()
	k, _ := c.make()
	n := k.NumParams()
	if len(k.ParamNames()) != n {
		t.Fatalf("%d names for %d parameters", len(k.ParamNames()), n)
	}
	p := k.Params(nil)
	if len(p) != n {
		t.Fatalf("Params(nil) has length %d, want %d", len(p), n)
	}
	snap := func(k Spatial) []float64 {
		g := make([]float64, len(feats)*len(feats))
		if err := k.Gram(g, feats); err != nil {
			t.Fatal(err)
		}
		return append(k.Params(nil), g...)
	}
	before := snap(k)
	fresh, _ := c.make()
	if err := fresh.SetParams(p); err != nil {
		t.Fatalf("SetParams(Params()): %v", err)
	}
	for i, v := range snap(fresh) {
		if ktRelErr(v, before[i]) > 1e-12 {
			t.Errorf("after round trip entry %d: %.17g, before %.17g", i, v, before[i])
		}
	}
	bad := [][]float64{make([]float64, n+1)}
	if n > 0 {
		bad = append(bad, nil)
	}
	for i := 0; i < n; i++ {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			b := append([]float64(nil), p...)
			b[i] = v
			bad = append(bad, b)
		}
	}
	for _, b := range bad {
		err := k.SetParams(b)
		if err == nil {
			t.Errorf("SetParams(%v) accepted", b)
		} else if !strings.HasPrefix(err.Error(), "kernel: ") {
			t.Errorf("SetParams error %q lacks the \"kernel: \" prefix", err)
		}
		if !ktSameBits(before, snap(k)) {
			t.Errorf("SetParams(%v) failed but changed the kernel", b)
		}
	}
	cl := k.Clone()
	if !ktSameBits(before, snap(cl)) {
		t.Fatal("clone differs from original")
	}
	if n > 0 {
		q := cl.Params(nil)
		for i := range q {
			q[i] += 0.25
		}
		if err := cl.SetParams(q); err != nil {
			t.Fatal(err)
		}
		if !ktSameBits(before, snap(k)) {
			t.Error("changing the clone changed the original")
		}
		if ktSameBits(before, snap(cl)) {
			t.Error("changing the clone's parameters changed nothing")
		}
	}
}

// skCheckBadFeatures: Gram rejects non-finite features, wrong lengths and
// short destinations with an error; Cov returns NaN for wrong lengths.
func skCheckBadFeatures(t *testing.T, k Spatial, feats [][]float64) {
	t.Helper()
	n := len(feats)
	g := make([]float64, n*n)
	expectErr := func(what string, dst []float64, f [][]float64) {
		t.Helper()
		err := k.Gram(dst, f)
		if err == nil {
			t.Errorf("%s: Gram accepted", what)
		} else if !strings.HasPrefix(err.Error(), "kernel: ") {
			t.Errorf("%s: error %q lacks the \"kernel: \" prefix", what, err)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		f := skCopy(feats)
		f[3][len(f[3])-1] = v
		expectErr(fmt.Sprintf("feature %v", v), g, f)
	}
	expectErr("short dst", g[:n*n-1], feats)
	if _, ok := k.(Independent); ok {
		return // Independent reads no fixed number of features
	}
	f := skCopy(feats)
	f[5] = append(f[5], 0.5)
	expectErr("too long a feature vector", g, f)
	f = skCopy(feats)
	f[5] = f[5][:len(f[5])-1]
	expectErr("too short a feature vector", g, f)
	if c := k.Cov(feats[0], feats[1][:len(feats[1])-1]); !math.IsNaN(c) {
		t.Errorf("Cov with a short vector = %g, want NaN", c)
	}
	if c := k.Cov(append(skCopy(feats[:1])[0], 1), feats[1]); !math.IsNaN(c) {
		t.Errorf("Cov with a long vector = %g, want NaN", c)
	}
}

func skCopy(f [][]float64) [][]float64 {
	c := make([][]float64, len(f))
	for i := range f {
		c[i] = append([]float64(nil), f[i]...)
	}
	return c
}

// TestSpatialClosedForms checks each kernel against its formula.
func TestSpatialClosedForms(t *testing.T) {
	p, q := []float64{0.3, -1.2}, []float64{1.1, 0.4}
	ls := []float64{0.7, 2.5}
	r := math.Hypot((p[0]-q[0])/ls[0], (p[1]-q[1])/ls[1])
	const s = 1.7
	for _, c := range []struct {
		k    func() (Spatial, error)
		want float64
	}{
		{func() (Spatial, error) { return NewMaternSpatial(12, Euclidean, s, ls...) }, s * math.Exp(-r)},
		{func() (Spatial, error) { return NewMaternSpatial(32, Euclidean, s, ls...) }, s * (1 + math.Sqrt(3)*r) * math.Exp(-math.Sqrt(3)*r)},
		{func() (Spatial, error) { return NewMaternSpatial(52, Euclidean, s, ls...) }, s * (1 + math.Sqrt(5)*r + 5*r*r/3) * math.Exp(-math.Sqrt(5)*r)},
		{func() (Spatial, error) { return NewRBF(Euclidean, s, ls...) }, s * math.Exp(-r*r/2)},
	} {
		k, err := c.k()
		if err != nil {
			t.Fatal(err)
		}
		if got := k.Cov(p, q); ktRelErr(got, c.want) > 1e-14 {
			t.Errorf("%T: Cov = %.17g, want %.17g", k, got, c.want)
		}
		if got := k.Cov(p, p); got != s {
			t.Errorf("%T: Cov(p, p) = %.17g, want exactly %g", k, got, s)
		}
		// Far apart: exactly 0, not NaN from Inf·0.
		if got := k.Cov([]float64{-1e300, 0}, []float64{1e300, 0}); got != 0 {
			t.Errorf("%T: Cov at huge distance = %g, want 0", k, got)
		}
	}
	// Great circle: r = Haversine/ℓ.
	g, _ := NewMaternSpatial(12, GreatCircle, 2, 1e5)
	a, b := []float64{40.7, -74.0}, []float64{42.4, -71.1}
	if got, want := g.Cov(a, b), 2*math.Exp(-geo.Haversine(a[0], a[1], b[0], b[1])/1e5); ktRelErr(got, want) > 1e-14 {
		t.Errorf("great-circle Matérn-1/2: %.17g, want %.17g", got, want)
	}
	if g.Dim() != 2 || g.Metric() != GreatCircle || fmt.Sprint(g.ParamNames()) != "[variance lengthscale]" {
		t.Errorf("great-circle kernel: Dim %d, Metric %v, names %v", g.Dim(), g.Metric(), g.ParamNames())
	}
	ard, _ := NewRBF(Euclidean, 1, 1, 2, 3)
	if fmt.Sprint(ard.ParamNames()) != "[variance lengthscale.0 lengthscale.1 lengthscale.2]" {
		t.Errorf("ARD names %v", ard.ParamNames())
	}
	// The kernel keeps its own copy of the lengthscales.
	ls2 := []float64{1, 2}
	k, _ := NewRBF(Euclidean, 1, ls2...)
	before := k.Cov(p, q)
	ls2[0] = 100
	if k.Cov(p, q) != before {
		t.Error("changing the caller's lengthscale slice changed the kernel")
	}
}

// TestSeparableIsProduct checks that Separable multiplies 1-D kernels,
// each on its own feature (the paper's product kernel).
func TestSeparableIsProduct(t *testing.T) {
	k1, _ := NewMaternSpatial(32, Euclidean, 1.3, 0.4)
	k2, _ := NewMaternSpatial(32, Euclidean, 0.6, 0.9)
	sep, err := NewSeparable(k1, k2)
	if err != nil {
		t.Fatal(err)
	}
	if sep.Dim() != 2 || fmt.Sprint(sep.ParamNames()) != "[0.variance 0.lengthscale 1.variance 1.lengthscale]" {
		t.Errorf("Dim %d, names %v", sep.Dim(), sep.ParamNames())
	}
	rng := rand.New(rand.NewSource(11))
	feats := skUniform(2, 0, 1)(rng, 25)
	n := len(feats)
	g := make([]float64, n*n)
	if err := sep.Gram(g, feats); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			want := k1.Cov(feats[i][:1], feats[j][:1]) * k2.Cov(feats[i][1:], feats[j][1:])
			if ktRelErr(g[i*n+j], want) > 1e-15 {
				t.Errorf("Gram[%d,%d] = %.17g, product of 1-D covariances %.17g", i, j, g[i*n+j], want)
			}
		}
	}
	// Not the isotropic 2-D Matérn.
	iso, _ := NewMaternSpatial(32, Euclidean, 1.3*0.6, 0.4, 0.9)
	if ktRelErr(sep.Cov(feats[0], feats[1]), iso.Cov(feats[0], feats[1])) < 1e-6 {
		t.Error("separable product coincides with the ARD Matérn: the test points are degenerate")
	}
	// A failing component is reported with its index.
	err = sep.Gram(g, [][]float64{{0, math.NaN()}})
	if err == nil || !strings.Contains(err.Error(), "component 1") {
		t.Errorf("NaN in feature 1: error %v, want one naming component 1", err)
	}
}

func TestIndependentKernel(t *testing.T) {
	var k Independent // the zero value is ready to use
	var _ Spatial = k
	var _ Spatial = &k
	if !IsIndependent(k) || !IsIndependent(&k) || !IsIndependent(nil) {
		t.Error("IsIndependent does not recognise Independent, *Independent or nil")
	}
	if rbf, _ := NewRBF(Euclidean, 1, 1); IsIndependent(rbf) {
		t.Error("IsIndependent(RBF) is true")
	}
	for _, c := range []struct {
		p, q []float64
		want float64
	}{
		{[]float64{1, 2}, []float64{1, 2}, 1},
		{[]float64{1, 2}, []float64{1, 2.5}, 0},
		{[]float64{1, 2}, []float64{1}, 0},
		{nil, nil, 1},
		{[]float64{math.NaN()}, []float64{math.NaN()}, 0},
	} {
		if got := k.Cov(c.p, c.q); got != c.want {
			t.Errorf("Cov(%v, %v) = %g, want %g", c.p, c.q, got, c.want)
		}
	}
	// Duplicate rows are still distinct products in the Gram matrix.
	g := []float64{9, 9, 9, 9}
	if err := k.Gram(g, [][]float64{{1, 2}, {1, 2}}); err != nil || fmt.Sprint(g) != "[1 0 0 1]" {
		t.Errorf("Gram = %v, err %v; want the identity", g, err)
	}
	if k.NumParams() != 0 || len(k.Params(nil)) != 0 || k.SetParams(nil) != nil || k.SetParams([]float64{1}) == nil {
		t.Error("Independent parameter plumbing")
	}
}

func TestSpatialConstructorErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	m, _ := NewMaternSpatial(32, Euclidean, 1, 1)
	for _, c := range []struct {
		name string
		make func() (Spatial, error)
	}{
		{"matern order 22", func() (Spatial, error) { return NewMaternSpatial(22, Euclidean, 1, 1) }},
		{"matern no lengthscale", func() (Spatial, error) { return NewMaternSpatial(32, Euclidean, 1) }},
		{"matern lengthscale 0", func() (Spatial, error) { return NewMaternSpatial(32, Euclidean, 1, 1, 0) }},
		{"matern lengthscale NaN", func() (Spatial, error) { return NewMaternSpatial(12, Euclidean, 1, nan) }},
		{"matern variance <0", func() (Spatial, error) { return NewMaternSpatial(52, Euclidean, -1, 1) }},
		{"matern variance Inf", func() (Spatial, error) { return NewMaternSpatial(52, Euclidean, inf, 1) }},
		{"great circle two lengthscales", func() (Spatial, error) { return NewMaternSpatial(32, GreatCircle, 1, 1, 1) }},
		{"great circle no lengthscale", func() (Spatial, error) { return NewMaternSpatial(32, GreatCircle, 1) }},
		{"unknown metric", func() (Spatial, error) { return NewMaternSpatial(32, Metric(7), 1, 1) }},
		{"rbf no lengthscale", func() (Spatial, error) { return NewRBF(Euclidean, 1) }},
		{"rbf lengthscale Inf", func() (Spatial, error) { return NewRBF(Euclidean, 1, inf) }},
		{"rbf variance 0", func() (Spatial, error) { return NewRBF(Chordal, 0, 1) }},
		{"rbf chordal two lengthscales", func() (Spatial, error) { return NewRBF(Chordal, 1, 1, 2) }},
		{"empty separable", func() (Spatial, error) { return NewSeparable() }},
		{"separable with nil", func() (Spatial, error) { return NewSeparable(m, nil) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := c.make()
			if err == nil {
				t.Fatalf("accepted: %v", k)
			}
			if !strings.HasPrefix(err.Error(), "kernel: ") {
				t.Errorf("error %q lacks the \"kernel: \" prefix", err)
			}
		})
	}
	// Latitudes beyond ±90° are rejected by the geographic metrics.
	g, _ := NewMaternSpatial(32, GreatCircle, 1, 1000)
	if err := g.Gram(make([]float64, 4), [][]float64{{0, 0}, {90.5, 0}}); err == nil {
		t.Error("latitude 90.5 accepted")
	}
}

// TestSpatialAccessors: the product kernels read back what they were built
// with.
func TestSpatialAccessors(t *testing.T) {
	m, _ := NewMaternSpatial(32, Chordal, 2, 500)
	r, _ := NewRBF(Euclidean, 0.5, 1, 3)
	if m.Variance() != 2 || fmt.Sprint(m.Lengthscales()) != "[500]" || m.Metric() != Chordal || m.Dim() != 2 {
		t.Errorf("MaternSpatial accessors: %v %v %v %v", m.Variance(), m.Lengthscales(), m.Metric(), m.Dim())
	}
	if r.Variance() != 0.5 || fmt.Sprint(r.Lengthscales()) != "[1 3]" || r.Metric() != Euclidean || r.Dim() != 2 {
		t.Errorf("RBF accessors: %v %v %v %v", r.Variance(), r.Lengthscales(), r.Metric(), r.Dim())
	}
	// Lengthscales is a copy.
	r.Lengthscales()[0] = 99
	if r.Lengthscales()[0] != 1 {
		t.Error("Lengthscales shares the kernel's slice")
	}
	s, _ := NewSeparable(m, r)
	if s.Len() != 2 || s.Dim() != 4 {
		t.Errorf("Separable: Len %d, Dim %d", s.Len(), s.Dim())
	}
}
