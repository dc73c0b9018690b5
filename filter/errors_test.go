package filter

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
	"gonum.org/v1/gonum/mat"
)

// TestBadInputErrors: bad times, sites and model shapes are errors with a
// clear message, never panics.
func TestBadInputErrors(t *testing.T) {
	m := indepModel(m32(1, 1), 2)(t)
	good := []float64{0, 1, 2}
	sites := NewSites(3, 2, false)
	cases := []struct {
		name  string
		run   func() error
		wants string
	}{
		{"unsorted", func() error { return Smooth(&Posterior{}, m, []float64{0, 2, 1}, sites) }, "not sorted"},
		{"duplicate", func() error { return Smooth(&Posterior{}, m, []float64{0, 1, 1}, sites) }, "duplicate time"},
		{"NaN time", func() error { return Smooth(&Posterior{}, m, []float64{0, math.NaN(), 2}, sites) }, "not finite"},
		{"sites shape", func() error { return Smooth(&Posterior{}, m, good, NewSites(2, 2, false)) }, "sites are 2 bins"},
		{"products", func() error { return Smooth(&Posterior{}, m, good, NewSites(3, 3, false)) }, "× 3 products"},
		{"negative precision", func() error {
			s := NewSites(3, 2, false)
			s.Nat2[1] = -1
			return Smooth(&Posterior{}, m, good, s)
		}, "precision"},
		{"NaN site", func() error {
			s := NewSites(3, 2, false)
			s.Nat1[0] = math.NaN()
			return Smooth(&Posterior{}, m, good, s)
		}, "not finite"},
		{"asymmetric full site", func() error {
			s := NewSites(3, 2, true)
			s.Nat2[1] = 0.5
			return Smooth(&Posterior{}, m, good, s)
		}, "symmetric"},
		{"nil model", func() error { return Smooth(&Posterior{}, nil, good, sites) }, "nil"},
		{"feature mismatch", func() error {
			k, _ := kernel.NewMatern32(1, 1)
			sp, _ := kernel.NewRBF(kernel.Euclidean, 1, 1, 1)
			_, err := NewModel(k, sp, [][]float64{{0, 0}, {1}}, 0)
			return err
		}, "filter:"},
		{"features count", func() error {
			k, _ := kernel.NewMatern32(1, 1)
			_, err := NewModel(k, nil, [][]float64{{0}, {1}}, 3)
			return err
		}, "3 products but 2 feature rows"},
		{"duplicate features", func() error {
			k, _ := kernel.NewMatern32(1, 1)
			sp, _ := kernel.NewRBF(kernel.Euclidean, 1, 1)
			_, err := NewModel(k, sp, [][]float64{{0}, {0}}, 0)
			return err
		}, "not positive definite"},
		{"bad lengthscale", func() error { _, err := kernel.NewMatern52(1, -2); return err }, "lengthscale"},
		{"NaN variance", func() error { _, err := kernel.NewMatern12(math.NaN(), 1); return err }, "variance"},
		{"model SetParams NaN", func() error { return m.SetParams([]float64{math.NaN(), 0}) }, "not finite"},
		{"predict NaN", func() error {
			var p Posterior
			if err := Smooth(&p, m, good, sites); err != nil {
				return nil
			}
			return p.Predict(math.NaN(), make([]float64, 2), nil)
		}, "non-finite"},
		{"predict empty", func() error { var p Posterior; return p.Predict(1, make([]float64, 2), nil) }, "empty posterior"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Errorf("got %v, want an error containing %q", err, c.wants)
			}
		})
	}
}

// TestLongRunStaysPSD drives the online filter for 200 000 bins of the
// paper's spatio-temporal prior, whose periodic part has no process noise,
// with random sites and missing products, and checks that the covariance
// stays symmetric positive semi-definite and the log-likelihood finite.
func TestLongRunStaysPSD(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	m := paperSTModel(t, 3, 3)
	o, err := NewOnline(m, OnlineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	nat1, nat2 := make([]float64, 3), make([]float64, 3)
	tt := 0.0
	for i := 0; i < n; i++ {
		tt += 0.05 + rng.Float64()
		if err := o.Advance(tt); err != nil {
			t.Fatal(err)
		}
		for k := range nat1 {
			nat1[k], nat2[k] = 0, 0
			if rng.Float64() < 0.8 {
				nat2[k] = 1 + 50*rng.Float64()
				nat1[k] = nat2[k] * rng.NormFloat64()
			}
		}
		if _, err := o.Update(nat1, nat2); err != nil {
			t.Fatalf("bin %d: %v", i, err)
		}
	}
	if math.IsNaN(o.LogLik()) || math.IsInf(o.LogLik(), 0) {
		t.Fatalf("log-likelihood %v", o.LogLik())
	}
	st := o.Save()
	P := st.Cov[0]
	D := len(st.Mean[0])
	sym := mat.NewSymDense(D, nil)
	var maxAbs float64
	for i := 0; i < D; i++ {
		for j := 0; j < D; j++ {
			if P[i*D+j] != P[j*D+i] {
				t.Fatalf("P not symmetric at (%d,%d)", i, j)
			}
			maxAbs = math.Max(maxAbs, math.Abs(P[i*D+j]))
		}
		for j := i; j < D; j++ {
			sym.SetSym(i, j, P[i*D+j])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, false) {
		t.Fatal("eigendecomposition failed")
	}
	minEig := eig.Values(nil)[0]
	t.Logf("after %d bins: min eigenvalue %.3g, max |P| %.3g", n, minEig, maxAbs)
	if minEig < -1e-12*maxAbs {
		t.Errorf("covariance lost positive semi-definiteness: min eigenvalue %.3g", minEig)
	}
}

// TestNumericalErrors: a run whose log marginal likelihood overflows is an
// ErrNumerical, with the package prefix once.
func TestNumericalErrors(t *testing.T) {
	k, _ := kernel.NewMatern32(1e300, 1)
	times := []float64{0, 1, 2}
	for _, full := range []bool{false} {
		m, err := NewModel(k, nil, nil, 2)
		if err != nil {
			t.Fatal(err)
		}
		s := NewSites(3, 2, full)
		for n := 0; n < 3; n++ {
			for c := 0; c < 2; c++ {
				s.SetGaussian(n, c, 1e300, 1)
			}
		}
		err = Filter(&Posterior{}, m, times, s)
		if !errors.Is(err, ErrNumerical) {
			t.Fatalf("full %v: got %v, want an ErrNumerical", full, err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "filter: ") || strings.Count(msg, "filter: ") != 1 {
			t.Errorf("full %v: message %q does not name the package once", full, msg)
		}
	}
}
