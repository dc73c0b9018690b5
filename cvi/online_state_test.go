package cvi

import (
	"testing"
)

// TestOnlineRestoreExact: an Online restored from a saved state computes
// the same later bins as the one it was saved from, to the last bit
// (sites, moments, steps and forecasts), for every site structure and
// refinement path.
func TestOnlineRestoreExact(t *testing.T) {
	for _, c := range onlineCases(t) {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewOnline(c.m, c.lik, DefaultOnlineOptions())
			if err != nil {
				t.Fatal(err)
			}
			np := c.data.NP
			var ra, rb BinResult
			const cut = 12
			var saved OnlineState
			for n := 0; n < cut; n++ {
				if err := a.Step(c.data.Times[n], c.data.Bin(n), &ra); err != nil {
					t.Fatal(err)
				}
			}
			saved = a.Save()
			b, err := NewOnline(c.m, c.lik, DefaultOnlineOptions())
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Restore(saved); err != nil {
				t.Fatal(err)
			}
			fa, fb := make([]float64, 3*np+np*np), make([]float64, 3*np+np*np)
			for n := cut; n < len(c.data.Times); n++ {
				if err := a.Step(c.data.Times[n], c.data.Bin(n), &ra); err != nil {
					t.Fatal(err)
				}
				if err := b.Step(c.data.Times[n], c.data.Bin(n), &rb); err != nil {
					t.Fatal(err)
				}
				if ra.Steps != rb.Steps || ra.Converged != rb.Converged || ra.LogLik != rb.LogLik {
					t.Fatalf("bin %d: steps %d/%d, converged %v/%v, log-lik %v/%v", n, ra.Steps, rb.Steps, ra.Converged, rb.Converged, ra.LogLik, rb.LogLik)
				}
				for _, p := range [][2][]float64{{ra.Mean, rb.Mean}, {ra.Var, rb.Var}, {ra.Nat1, rb.Nat1}, {ra.Nat2, rb.Nat2}} {
					for i := range p[0] {
						if p[0][i] != p[1][i] {
							t.Fatalf("bin %d: %v, restored %v", n, p[0], p[1])
						}
					}
				}
				tf := c.data.Times[n] + 0.5
				if err := a.Forecast(tf, fa[:np], fa[np:2*np], fa[3*np:]); err != nil {
					t.Fatal(err)
				}
				if err := b.Forecast(tf, fb[:np], fb[np:2*np], fb[3*np:]); err != nil {
					t.Fatal(err)
				}
				for i := range fa {
					if fa[i] != fb[i] {
						t.Fatalf("bin %d: forecast %v, restored %v", n, fa, fb)
					}
				}
			}
		})
	}
}
