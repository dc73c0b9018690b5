package filter

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// startTol is the tolerance of every comparison of a windowed run with the
// full run, relative as relClose measures it (|a−b| <= tol·max(1, |b|)).
const startTol = 1e-9

// startCases are the models of the start tests: every code path of a
// batch run (unrolled 2-state chains, dense per-product chains, the
// coupled chain with full and diagonal sites, the stack of per-product
// kernels).
func startCases() []testCase {
	return []testCase{
		{"matern32/indep3 (unrolled)", indepModel(m32(0.7, 1.5), 3), false},
		{"matern52+periodic3/indep3 (dense chains)", func(t *testing.T) *Model {
			must := mustT(t)
			sum := must(kernel.NewSum(must(kernel.NewMatern52(1.1, 2.0)), must(kernel.NewPeriodic(0.8, 1.0, 7.0, 3))))
			m, err := NewModel(sum, nil, nil, 3)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}, false},
		{"st/matern32 x sep-matern/4/full-sites", stStartModel, true},
		{"st/matern32 x sep-matern/4", stStartModel, false},
		{"st/m32+per3 x sep-m32/3/full-sites", func(t *testing.T) *Model { return paperSTModel(t, 3, 3) }, true},
		{"per-product/3/full-sites", perProductModel(), true},
		{"per-product/3", perProductModel(), false},
		{"matern32/indep1", indepModel(m32(0.9, 2.0), 1), false},
	}
}

// stStartModel is Matérn-3/2 over time × separable Matérn spatial kernel
// over four products.
func stStartModel(t *testing.T) *Model {
	must := mustT(t)
	s1, _ := kernel.NewMaternSpatial(32, kernel.Euclidean, 1.3, 1.5)
	s2, _ := kernel.NewMaternSpatial(12, kernel.Euclidean, 1.0, 2.0)
	sep, err := kernel.NewSeparable(s1, s2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(must(kernel.NewMatern32(1.0, 3.0)), sep, stFeatures(4), 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sitesFrom returns the sites of bins [w, N) (views of s).
func sitesFrom(s *Sites, w int) *Sites {
	np := s.NP
	q := np
	if s.Full {
		q = np * np
	}
	return &Sites{N: s.N - w, NP: np, Full: s.Full, Nat1: s.Nat1[w*np:], Nat2: s.Nat2[w*q:]}
}

// onlinePrefix runs an Online filter over bins [0, w) and returns it.
func onlinePrefix(t *testing.T, m *Model, times []float64, s *Sites, w int) *Online {
	t.Helper()
	o, err := NewOnline(m, OnlineOptions{FullSites: s.Full})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < w; n++ {
		if err := o.Advance(times[n]); err != nil {
			t.Fatal(err)
		}
		l1, l2 := s.Bin(n)
		if _, err := o.Update(l1, l2); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// checkWindow compares the posterior of bins [w, N) with bins w.. of the
// full posterior: means, variances and joint covariances.
func checkWindow(t *testing.T, what string, win, full *Posterior, w int) {
	t.Helper()
	np := full.NP
	for n := 0; n < len(win.Times); n++ {
		for k := 0; k < np; k++ {
			x, y := n*np+k, (n+w)*np+k
			if !relClose(win.Mean[x], full.Mean[y], startTol) || !relClose(win.Var[x], full.Var[y], startTol) {
				t.Fatalf("%s: bin %d product %d: window (%.15g, %.15g), full (%.15g, %.15g)",
					what, n+w, k, win.Mean[x], win.Var[x], full.Mean[y], full.Var[y])
			}
		}
		if (win.Cov == nil) != (full.Cov == nil) {
			t.Fatalf("%s: window Cov nil %v, full Cov nil %v", what, win.Cov == nil, full.Cov == nil)
		}
		if win.Cov == nil {
			continue
		}
		for i := 0; i < np*np; i++ {
			a, b := win.Cov[n*np*np+i], full.Cov[(n+w)*np*np+i]
			if !relClose(a, b, startTol) {
				t.Fatalf("%s: bin %d cov (%d,%d): window %.15g, full %.15g", what, n+w, i/np, i%np, a, b)
			}
		}
	}
}

// TestStartWindowMatchesFullRun: a run of a model started at the Online
// filter's state at bin w−1 over bins [w, N) reproduces the full run on
// those bins — smoothed (RTS and Bryson–Frazier) and filtered marginals,
// predictions inside and after the window — and the full log marginal
// likelihood is the prefix's plus the window's.
func TestStartWindowMatchesFullRun(t *testing.T) {
	for _, tc := range startCases() {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 23))
			m := tc.model(t)
			np := m.NumProducts()
			times := randomTimes(rng, 40, 25)
			s := randomSites(rng, len(times), np, tc.full, 0.3)
			const w = 17
			var full, fullMB, fullF Posterior
			if err := Smooth(&full, m, times, s); err != nil {
				t.Fatal(err)
			}
			if err := SmoothMarginals(&fullMB, m, times, s); err != nil {
				t.Fatal(err)
			}
			if err := Filter(&fullF, m, times, s); err != nil {
				t.Fatal(err)
			}
			o := onlinePrefix(t, m, times, s, w)
			ms, err := m.WithStart(times[w-1], o.Save())
			if err != nil {
				t.Fatal(err)
			}
			wt, ws := times[w:], sitesFrom(s, w)
			var win, winMB, winF Posterior
			if err := Smooth(&win, ms, wt, ws); err != nil {
				t.Fatal(err)
			}
			if err := SmoothMarginals(&winMB, ms, wt, ws); err != nil {
				t.Fatal(err)
			}
			if err := Filter(&winF, ms, wt, ws); err != nil {
				t.Fatal(err)
			}
			checkWindow(t, "Smooth", &win, &full, w)
			checkWindow(t, "SmoothMarginals", &winMB, &fullMB, w)
			checkWindow(t, "Filter", &winF, &fullF, w)
			for name, p := range map[string]*Posterior{"Smooth": &win, "SmoothMarginals": &winMB, "Filter": &winF} {
				if got := o.LogLik() + p.LogLik; !relClose(got, full.LogLik, startTol) {
					t.Errorf("%s: prefix %.15g + window %.15g = %.15g, full run %.15g", name, o.LogLik(), p.LogLik, got, full.LogLik)
				}
			}
			// Predictions at the start, before the window's first bin, at
			// and between its bins and after its end.
			t0, last := times[w-1], times[len(times)-1]
			at := []float64{t0, 0.5 * (t0 + times[w]), times[w], 0.3*times[w+3] + 0.7*times[w+4], times[w+10], last, last + 0.8}
			mean, cov := make([]float64, np), make([]float64, np*np)
			wmean, wcov := make([]float64, np), make([]float64, np*np)
			for _, pair := range []struct {
				name      string
				win, full *Posterior
			}{{"smoothed", &win, &full}, {"filtered", &winF, &fullF}} {
				for _, tt := range at {
					if err := pair.win.Predict(tt, mean, cov); err != nil {
						t.Fatal(err)
					}
					if err := pair.full.Predict(tt, wmean, wcov); err != nil {
						t.Fatal(err)
					}
					for i := range mean {
						if !relClose(mean[i], wmean[i], startTol) {
							t.Fatalf("%s predict at %v product %d: window %.15g, full %.15g", pair.name, tt, i, mean[i], wmean[i])
						}
					}
					for i := range cov {
						if !relClose(cov[i], wcov[i], startTol) {
							t.Fatalf("%s predict at %v cov (%d,%d): window %.15g, full %.15g", pair.name, tt, i/np, i%np, cov[i], wcov[i])
						}
					}
				}
			}
			// An Online filter of the started model continues where the
			// prefix's left off.
			oc, err := NewOnline(ms, OnlineOptions{FullSites: tc.full})
			if err != nil {
				t.Fatal(err)
			}
			for n := w; n < len(times); n++ {
				if err := oc.Advance(times[n]); err != nil {
					t.Fatal(err)
				}
				l1, l2 := s.Bin(n)
				if _, err := oc.Update(l1, l2); err != nil {
					t.Fatal(err)
				}
			}
			if !relClose(oc.LogLik(), winF.LogLik, startTol) {
				t.Errorf("online from the start lml %.15g, batch %.15g", oc.LogLik(), winF.LogLik)
			}
		})
	}
}

// TestStartErrors: starts of the wrong layout, dimension or values, and
// runs or predictions not after the start, are refused with an error.
func TestStartErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 8))
	m := indepModel(m32(0.7, 1.5), 3)(t)
	times := randomTimes(rng, 20, 10)
	diag := randomSites(rng, len(times), 3, false, 0.2)
	fullS := randomSites(rng, len(times), 3, true, 0.2)
	const w = 8
	diagState := onlinePrefix(t, m, times, diag, w).Save()
	fullState := onlinePrefix(t, m, times, fullS, w).Save()
	t0 := times[w-1]
	wt := times[w:]

	bad := func(f func(s *State)) State {
		s := onlinePrefix(t, m, times, diag, w).Save()
		f(&s)
		return s
	}
	for name, s := range map[string]State{
		"two chains":     bad(func(s *State) { s.Mean, s.Cov = s.Mean[:2], s.Cov[:2] }),
		"no chains":      {},
		"short mean":     bad(func(s *State) { s.Mean[1] = s.Mean[1][:1] }),
		"short cov":      bad(func(s *State) { s.Cov[2] = s.Cov[2][:3] }),
		"covs missing":   bad(func(s *State) { s.Cov = s.Cov[:1] }),
		"NaN mean":       bad(func(s *State) { s.Mean[0][1] = math.NaN() }),
		"Inf cov":        bad(func(s *State) { s.Cov[1][3] = math.Inf(1) }),
		"negative var":   bad(func(s *State) { s.Cov[1][0] = -1 }),
		"coupled dim":    {Mean: [][]float64{make([]float64, 4)}, Cov: [][]float64{make([]float64, 16)}},
		"coupled n chns": {Mean: make([][]float64, 2), Cov: make([][]float64, 2)},
	} {
		if _, err := m.WithStart(t0, s); err == nil {
			t.Errorf("%s: WithStart accepted the state", name)
		}
	}
	if _, err := m.WithStart(t0+1, diagState); err == nil {
		t.Error("a state saved at another time accepted")
	}
	for _, t0 := range []float64{math.NaN(), math.Inf(-1)} {
		if _, err := m.WithStart(t0, diagState); err == nil {
			t.Errorf("start time %v accepted", t0)
		}
	}
	// A coupled model takes one chain only.
	st := stStartModel(t)
	if _, err := st.WithStart(0, State{Mean: make([][]float64, 4), Cov: make([][]float64, 4)}); err == nil {
		t.Error("coupled model accepted a per-product start")
	}

	md, err := m.WithStart(t0, diagState)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := m.WithStart(t0, fullState)
	if err != nil {
		t.Fatal(err)
	}
	var p Posterior
	for name, f := range map[string]func() error{
		"diagonal start, full sites":    func() error { return Smooth(&p, md, wt, sitesFrom(fullS, w)) },
		"full start, diagonal sites":    func() error { return SmoothMarginals(&p, mf, wt, sitesFrom(diag, w)) },
		"full start, diagonal online":   func() error { _, err := NewOnline(mf, OnlineOptions{}); return err },
		"diagonal start, full online":   func() error { _, err := NewOnline(md, OnlineOptions{FullSites: true}); return err },
		"first bin at the start":        func() error { return Filter(&p, md, times[w-1:], sitesFrom(diag, w-1)) },
		"first bin before the start":    func() error { return Smooth(&p, md, times[2:], sitesFrom(diag, 2)) },
		"full sites, bin at the start":  func() error { return Smooth(&p, mf, times[w-1:], sitesFrom(fullS, w-1)) },
		"online advance to the start":   func() error { o, _ := NewOnline(md, OnlineOptions{}); return o.Advance(t0) },
		"empty run with a wrong layout": func() error { return Filter(&p, md, nil, NewSites(0, 3, true)) },
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// Predict before the start fails, at the start works.
	if err := Smooth(&p, md, wt, sitesFrom(diag, w)); err != nil {
		t.Fatal(err)
	}
	mean := make([]float64, 3)
	if err := p.Predict(t0-0.1, mean, nil); err == nil {
		t.Error("predict before the start: no error")
	}
	if err := p.Predict(t0, mean, nil); err != nil {
		t.Errorf("predict at the start: %v", err)
	}
}

// TestStartAccessors: the start survives Clone and SetParams, WithoutStart
// drops it, Start returns a copy, and the started model shares nothing
// mutable with the original.
func TestStartAccessors(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	m := perProductModel()(t)
	times := randomTimes(rng, 10, 5)
	s := randomSites(rng, len(times), 3, false, 0)
	state := onlinePrefix(t, m, times, s, 5).Save()
	state.Cov[0][1] += 1e-9 // averaged with its transpose
	ms, err := m.WithStart(times[4], state)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := m.Start(); ok {
		t.Error("WithStart gave the original a start")
	}
	t0, got, ok := ms.Start()
	if !ok || t0 != times[4] || len(got.Mean) != 3 {
		t.Fatalf("Start() = %v, %d chains, %v", t0, len(got.Mean), ok)
	}
	if d := len(got.Mean[0]); got.Cov[0][1] != got.Cov[0][d] {
		t.Errorf("start covariance not symmetrised: %v vs %v", got.Cov[0][1], got.Cov[0][d])
	}
	got.Mean[0][0] = 1e6
	if _, again, _ := ms.Start(); again.Mean[0][0] == 1e6 {
		t.Error("Start returned the model's own slices")
	}
	if _, _, ok := ms.Clone().Start(); !ok {
		t.Error("Clone dropped the start")
	}
	if _, _, ok := ms.WithoutStart().Start(); ok {
		t.Error("WithoutStart kept the start")
	}
	params := ms.Params(nil)
	for i := range params {
		params[i] += 0.2
	}
	if err := ms.SetParams(params); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := ms.Start(); !ok {
		t.Error("SetParams dropped the start")
	}
	orig := perProductModel()(t)
	if a, b := m.Params(nil), orig.Params(nil); maxAbsDiff(a, b) != 0 {
		t.Errorf("changing the started model changed the original: %v vs %v", a, b)
	}
}
