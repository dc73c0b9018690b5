package filter

import (
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// stFeatures returns n product locations in [−2, 2]².
func stFeatures(n int) [][]float64 {
	rng := rand.New(rand.NewPCG(123, 1))
	f := make([][]float64, n)
	for i := range f {
		f[i] = []float64{4*rng.Float64() - 2, 4*rng.Float64() - 2}
	}
	return f
}

// paperSTModel is the paper's spatio-temporal prior: Matérn-3/2 +
// Periodic(J) over time, separable Matérn-3/2 × Matérn-3/2 over space.
func paperSTModel(t testing.TB, np, harmonics int) *Model {
	m32, err := kernel.NewMatern32(1.0, 3.0)
	if err != nil {
		t.Fatal(err)
	}
	per, err := kernel.NewPeriodic(0.8, 1.0, 7.0, harmonics)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := kernel.NewSum(m32, per)
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := kernel.NewMaternSpatial(32, kernel.Euclidean, 1.3, 1.5)
	s2, _ := kernel.NewMaternSpatial(32, kernel.Euclidean, 1.0, 2.0)
	sep, err := kernel.NewSeparable(s1, s2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(sum, sep, stFeatures(np), 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// extraDenseCases lists further models (spatio-temporal, periodic, sums,
// products) for the dense-GP, prediction and online tests.
var extraDenseCases = []testCase{
	{"st/m32+per3 x sep-m32/4 products", func(t *testing.T) *Model { return paperSTModel(t, 4, 3) }, false},
	{"st/m32+per3 x sep-m32/3 products/full-sites", func(t *testing.T) *Model { return paperSTModel(t, 3, 3) }, true},
	{"st/quasiperiodic x rbf", func(t *testing.T) *Model {
		qp, err := kernel.NewQuasiPeriodic(1.2, 0.9, 5, 8, 4, 32)
		if err != nil {
			t.Fatal(err)
		}
		rbf, _ := kernel.NewRBF(kernel.Euclidean, 1.0, 1.7, 0.8)
		m, err := NewModel(qp, rbf, stFeatures(3), 0)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}, false},
	{"product m52*m12 x matern12 spatial", func(t *testing.T) *Model {
		a, _ := kernel.NewMatern52(1, 2)
		b, _ := kernel.NewMatern12(0.7, 5)
		p, err := kernel.NewProduct(a, b)
		if err != nil {
			t.Fatal(err)
		}
		sp, _ := kernel.NewMaternSpatial(12, kernel.Euclidean, 1.0, 2.5, 2.5)
		m, err := NewModel(p, sp, stFeatures(3), 0)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}, false},
	{"periodic/indep2", func(t *testing.T) *Model {
		p, _ := kernel.NewPeriodic(1.1, 0.8, 6, 5)
		m, _ := NewModel(p, nil, nil, 2)
		return m
	}, false},
	{"sum m12+m52/indep2 full-sites", func(t *testing.T) *Model {
		a, _ := kernel.NewMatern12(0.5, 1)
		b, _ := kernel.NewMatern52(1, 4)
		s, _ := kernel.NewSum(a, b)
		m, _ := NewModel(s, nil, nil, 2)
		return m
	}, true},
}
