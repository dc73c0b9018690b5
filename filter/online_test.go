package filter

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// TestOnlineMatchesBatchFilter drives the Online filter bin by bin and
// compares every filtered marginal and the log marginal likelihood with a
// batch Filter over the same sites; a forecast from the last bin must equal
// the filtered posterior's Predict.
func TestOnlineMatchesBatchFilter(t *testing.T) {
	cases := []testCase{
		{"matern32/indep3", indepModel(m32(0.7, 1.5), 3), false},
		{"matern52/indep2/full", indepModel(m52(1.1, 2.0), 2), true},
		{"matern12/indep1", indepModel(m12(1.0, 0.5), 1), false},
	}
	cases = append(cases, testCase{"per-product/full", perProductModel(), true}, testCase{"per-product", perProductModel(), false})
	cases = append(cases, extraDenseCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 2))
			m := tc.model(t)
			np := m.NumProducts()
			times := randomTimes(rng, 30, 15)
			s := randomSites(rng, len(times), np, tc.full, 0.25)
			var p Posterior
			if err := Filter(&p, m, times, s); err != nil {
				t.Fatal(err)
			}
			o, err := NewOnline(m, OnlineOptions{FullSites: tc.full})
			if err != nil {
				t.Fatal(err)
			}
			mean, cov := make([]float64, np), make([]float64, np*np)
			var saved State
			for n, tt := range times {
				if err := o.Advance(tt); err != nil {
					t.Fatal(err)
				}
				l1, l2 := s.Bin(n)
				if _, err := o.Update(l1, l2); err != nil {
					t.Fatal(err)
				}
				o.Marginal(mean, cov)
				for k := 0; k < np; k++ {
					if !relClose(mean[k], p.Mean[n*np+k], 1e-12) || !relClose(cov[k*np+k], p.Var[n*np+k], 1e-12) {
						t.Fatalf("bin %d product %d: online (%v, %v), batch (%v, %v)", n, k, mean[k], cov[k*np+k], p.Mean[n*np+k], p.Var[n*np+k])
					}
				}
				if n == 10 {
					saved = o.Save()
				}
			}
			if !relClose(o.LogLik(), p.LogLik, 1e-12) {
				t.Errorf("lml online %.15g, batch %.15g", o.LogLik(), p.LogLik)
			}
			last := times[len(times)-1]
			want, wcov := make([]float64, np), make([]float64, np*np)
			for _, h := range []float64{0, 0.7, 5} {
				if err := o.Forecast(last+h, mean, cov); err != nil {
					t.Fatal(err)
				}
				if err := p.Predict(last+h, want, wcov); err != nil {
					t.Fatal(err)
				}
				for k := 0; k < np; k++ {
					if !relClose(mean[k], want[k], 1e-12) || !relClose(cov[k*np+k], wcov[k*np+k], 1e-12) {
						t.Errorf("forecast +%v product %d: (%v,%v) vs (%v,%v)", h, k, mean[k], cov[k*np+k], want[k], wcov[k*np+k])
					}
				}
			}
			// Restoring the state saved at bin 10 and replaying the rest
			// reproduces the run exactly.
			r, _ := NewOnline(m, OnlineOptions{FullSites: tc.full})
			if err := r.Restore(saved); err != nil {
				t.Fatal(err)
			}
			for n := 11; n < len(times); n++ {
				_ = r.Advance(times[n])
				l1, l2 := s.Bin(n)
				if _, err := r.Update(l1, l2); err != nil {
					t.Fatal(err)
				}
			}
			if r.LogLik() != o.LogLik() {
				t.Errorf("restored run lml %v, original %v", r.LogLik(), o.LogLik())
			}
		})
	}
}

func TestOnlineRejectsBadInput(t *testing.T) {
	m := indepModel(m32(1, 1), 2)(t)
	o, _ := NewOnline(m, OnlineOptions{})
	if _, err := o.Update([]float64{0, 0}, []float64{1, 1}); err == nil {
		t.Error("update before advance accepted")
	}
	if err := o.Advance(1); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"advance backwards": func() error { return o.Advance(0.5) },
		"advance same time": func() error { return o.Advance(1) },
		"advance NaN":       func() error { return o.Advance(math.NaN()) },
		"NaN site":          func() error { _, err := o.Update([]float64{math.NaN(), 0}, []float64{1, 1}); return err },
		"negative precision": func() error {
			_, err := o.Update([]float64{0, 0}, []float64{-1, 1})
			return err
		},
		"short site": func() error { _, err := o.Update([]float64{0}, []float64{1}); return err },
		"forecast past": func() error {
			return o.Forecast(0, make([]float64, 2), nil)
		},
		"restore wrong shape": func() error { return o.Restore(State{Mean: [][]float64{{1}}}) },
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// The filter still works after rejected input.
	if _, err := o.Update([]float64{1, 1}, []float64{1, 1}); err != nil {
		t.Fatal(err)
	}
}

// TestOnlineRestoreSymmetrises checks that a restored covariance that is
// not exactly symmetric is averaged, as the update reads one triangle.
func TestOnlineRestoreSymmetrises(t *testing.T) {
	k, _ := kernel.NewMatern32(1, 2)
	m, _ := NewModel(k, nil, nil, 1)
	o, err := NewOnline(m, OnlineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := o.Save()
	s.Cov[0] = []float64{2, 0.3 + 1e-9, 0.3 - 1e-9, 1}
	if err := o.Restore(s); err != nil {
		t.Fatal(err)
	}
	got := o.Save().Cov[0]
	if got[1] != got[2] || math.Abs(got[1]-0.3) > 1e-15 {
		t.Errorf("restored covariance %v, want the symmetric average", got)
	}
}

// TestOnlineForecastSteps: stepping the forecast one dt at a time gives
// what Forecast gives at each horizon (1e-12), and leaves the state as
// it was.
func TestOnlineForecastSteps(t *testing.T) {
	cases := []testCase{
		{"matern32/indep3", indepModel(m32(0.7, 1.5), 3), false},
		{"per-product/full", perProductModel(), true},
	}
	cases = append(cases, extraDenseCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(4, 7))
			m := tc.model(t)
			np := m.NumProducts()
			times := randomTimes(rng, 12, 15)
			s := randomSites(rng, len(times), np, tc.full, 0.25)
			o, err := NewOnline(m, OnlineOptions{FullSites: tc.full})
			if err != nil {
				t.Fatal(err)
			}
			for n, tt := range times {
				if err := o.Advance(tt); err != nil {
					t.Fatal(err)
				}
				l1, l2 := s.Bin(n)
				if _, err := o.Update(l1, l2); err != nil {
					t.Fatal(err)
				}
			}
			before := o.Save()
			last, dt := times[len(times)-1], 0.7
			mean, cov := make([]float64, np), make([]float64, np*np)
			want, wcov := make([]float64, np), make([]float64, np*np)
			var gotM, gotC [][]float64
			if err := o.ForecastSteps(dt, 5, mean, cov, func(h int) {
				gotM = append(gotM, append([]float64(nil), mean...))
				gotC = append(gotC, append([]float64(nil), cov...))
			}); err != nil {
				t.Fatal(err)
			}
			if len(gotM) != 5 {
				t.Fatalf("%d calls", len(gotM))
			}
			for h := 1; h <= 5; h++ {
				if err := o.Forecast(last+float64(h)*dt, want, wcov); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if !relClose(gotM[h-1][i], want[i], 1e-12) {
						t.Fatalf("h=%d product %d: stepped mean %v, direct %v", h, i, gotM[h-1][i], want[i])
					}
				}
				for i := range wcov {
					if !relClose(gotC[h-1][i], wcov[i], 1e-12) {
						t.Fatalf("h=%d cov %d: stepped %v, direct %v", h, i, gotC[h-1][i], wcov[i])
					}
				}
			}
			after := o.Save()
			for c := range before.Mean {
				for i := range before.Mean[c] {
					if before.Mean[c][i] != after.Mean[c][i] {
						t.Fatal("ForecastSteps changed the state")
					}
				}
			}
		})
	}
}
