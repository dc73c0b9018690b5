package filter

import (
	"math/rand/v2"
	"testing"
)

// TestOnlineForecastScalar: for scalar chains Forecast takes the marginal
// alone through H·A and H·Q·Hᵀ; it gives what propagating the whole state
// gives (1e-12), at the step the transition is cached for and at others,
// and from a start state at its own time before any Advance (a cached
// step of 0 must not be taken for a transition never computed).
func TestOnlineForecastScalar(t *testing.T) {
	for _, tc := range startCases() {
		if tc.full {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(4, 5))
			m := tc.model(t)
			np := m.NumProducts()
			o, err := NewOnline(m, OnlineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if o.ha == nil {
				t.Skip("not scalar chains")
			}
			times := randomTimes(rng, 12, 6)
			s := randomSites(rng, len(times), np, false, 0.25)
			mean, cov := make([]float64, np), make([]float64, np*np)
			want, wcov := make([]float64, np), make([]float64, np*np)
			check := func(what string) {
				t.Helper()
				for k := 0; k < np; k++ {
					if !relClose(mean[k], want[k], 1e-12) || !relClose(cov[k*np+k], wcov[k*np+k], 1e-12) {
						t.Fatalf("%s, product %d: forecast (%v, %v), propagated (%v, %v)", what, k, mean[k], cov[k*np+k], want[k], wcov[k*np+k])
					}
				}
			}
			for n, tt := range times {
				if err := o.Advance(tt); err != nil {
					t.Fatal(err)
				}
				l1, l2 := s.Bin(n)
				if _, err := o.Update(l1, l2); err != nil {
					t.Fatal(err)
				}
				for _, dt := range []float64{0, 0.4, 1.3} {
					if err := o.Forecast(tt+dt, mean, cov); err != nil {
						t.Fatal(err)
					}
					o.propagate(dt)
					o.marginal(o.nm, o.nP, want, wcov)
					check("after an update")
				}
			}
			ms, err := m.WithStart(times[len(times)-1], o.Save())
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewOnline(ms, OnlineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Forecast(times[len(times)-1], mean, cov); err != nil {
				t.Fatal(err)
			}
			o.Marginal(want, wcov)
			check("from a start state")
		})
	}
}
