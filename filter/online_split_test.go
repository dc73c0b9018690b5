package filter

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// splitCases are models of independent scalar chains: one shared sum
// kernel (Matérn-3/2 + periodic, 2×2 blocks), per-product kernels of
// different dimensions, and a shared Matérn-5/2 (a 3×3 block).
func splitCases() []testCase {
	return []testCase{
		{"m32+per3/indep9", func(t *testing.T) *Model {
			must := mustT(t)
			sum := must(kernel.NewSum(must(kernel.NewMatern32(4, 24)), must(kernel.NewPeriodic(2, 1, 24, 3))))
			m, err := NewModel(sum, nil, nil, 9)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}, false},
		{"per-product/3", perProductModel(), false},
		{"m52/indep5", indepModel(m52(1.1, 2.0), 5), false},
	}
}

// splitAt returns the options of a filter of diagonal sites whose
// per-chain passes split from n chains.
func splitAt(n int) OnlineOptions { return OnlineOptions{SplitMin: n} }

// TestOnlineSplitMatchesSerial: an Online whose per-chain passes run in
// pieces on 1, 2 or 7 goroutines (OnlineOptions.Workers) gives the serial loop's
// numbers bit for bit over bins with missing sites: predicted and
// filtered marginals, the bin's log-likelihood, the saved state and the
// 5-step forecasts. The forecasts, formed four horizons at a time, also
// equal the horizon-by-horizon rowMoments of H·Aʰ exactly and the
// propagated state's marginal to 1e-12.
func TestOnlineSplitMatchesSerial(t *testing.T) {
	for _, tc := range splitCases() {
		for _, nw := range []int{1, 2, 7} {
			t.Run(fmt.Sprintf("%s/workers=%d", tc.name, nw), func(t *testing.T) {
				testSplitMatchesSerial(t, tc.model(t), nw)
			})
		}
	}
}

// testSplitMatchesSerial is TestOnlineSplitMatchesSerial for model m on nw
// goroutines.
func testSplitMatchesSerial(t *testing.T, m *Model, nw int) {
	np := m.NumProducts()
	opts := splitAt(2)
	opts.Workers = nw
	split, err := NewOnline(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := NewOnline(m, OnlineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !split.splits() || serial.splits() {
		t.Fatalf("split %v, serial %v", split.splits(), serial.splits())
	}
	rng := rand.New(rand.NewPCG(8, 9))
	times := randomTimes(rng, 20, 30)
	s := randomSites(rng, len(times), np, false, 0.25)
	const n = 5
	got, want := newMoments(np, n), newMoments(np, n)
	var gs, ws State
	for b, tt := range times {
		l1, l2 := s.Bin(b)
		for _, x := range []struct {
			o   *Online
			mom *moments
			st  *State
		}{{split, got, &gs}, {serial, want, &ws}} {
			x.o.SaveTo(x.st)
			if err := x.o.Advance(tt); err != nil {
				t.Fatal(err)
			}
			x.o.MarginalVar(x.mom.pm, x.mom.pv)
			ll, err := x.o.Update(l1, l2)
			if err != nil {
				t.Fatal(err)
			}
			x.mom.ll = ll
			x.o.MarginalVar(x.mom.fm, x.mom.fv)
			if err := x.o.ForecastStepsVar(0.7, n, x.mom.m, x.mom.v, func(h int) {
				copy(x.mom.hm[h-1], x.mom.m)
				copy(x.mom.hv[h-1], x.mom.v)
			}); err != nil {
				t.Fatal(err)
			}
		}
		if !got.equal(want) || !statesEqual(gs, ws) || split.LogLik() != serial.LogLik() {
			t.Fatalf("bin %d: the split filter differs from the serial one", b)
		}
		checkForecastRows(t, serial, 0.7, want)
	}
}

// checkForecastRows compares ForecastStepsVar's horizons (in mom) with
// rowMoments of each horizon's row, exactly, and with the marginal of the
// propagated state, to 1e-12.
func checkForecastRows(t *testing.T, o *Online, dt float64, mom *moments) {
	t.Helper()
	o.transition(dt)
	o.fc.reset(o)
	np := o.model.np
	pm, pcov := make([]float64, np), make([]float64, np*np)
	err := o.ForecastSteps(dt, len(mom.hm), pm, pcov, func(h int) {
		o.fc.next(o)
		for c := range o.m {
			g := o.fc.group[c]
			mu, v := rowMoments(o.fc.rows[g], o.m[c], o.P[c])
			v += o.fc.noise[g]
			if mu != mom.hm[h-1][c] || v != mom.hv[h-1][c] {
				t.Fatalf("h=%d product %d: (%v, %v), rowMoments (%v, %v)", h, c, mom.hm[h-1][c], mom.hv[h-1][c], mu, v)
			}
			if !relClose(mu, pm[c], 1e-12) || !relClose(v, pcov[c*np+c], 1e-12) {
				t.Fatalf("h=%d product %d: (%v, %v), propagated (%v, %v)", h, c, mu, v, pm[c], pcov[c*np+c])
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// moments is what TestOnlineSplitMatchesSerial compares per bin.
type moments struct {
	pm, pv, fm, fv, m, v []float64
	hm, hv               [][]float64
	ll                   float64
}

func newMoments(np, n int) *moments {
	x := &moments{}
	for _, p := range []*[]float64{&x.pm, &x.pv, &x.fm, &x.fv, &x.m, &x.v} {
		*p = make([]float64, np)
	}
	for h := 0; h < n; h++ {
		x.hm, x.hv = append(x.hm, make([]float64, np)), append(x.hv, make([]float64, np))
	}
	return x
}

func (x *moments) equal(y *moments) bool {
	if x.ll != y.ll && !(math.IsNaN(x.ll) && math.IsNaN(y.ll)) {
		return false
	}
	same := func(a, b []float64) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	for _, p := range [][2][]float64{{x.pm, y.pm}, {x.pv, y.pv}, {x.fm, y.fm}, {x.fv, y.fv}} {
		if !same(p[0], p[1]) {
			return false
		}
	}
	for h := range x.hm {
		if !same(x.hm[h], y.hm[h]) || !same(x.hv[h], y.hv[h]) {
			return false
		}
	}
	return true
}

func statesEqual(a, b State) bool {
	if a.Started != b.Started || a.Time != b.Time || a.LogLik != b.LogLik || len(a.Mean) != len(b.Mean) {
		return false
	}
	for c := range a.Mean {
		for i := range a.Mean[c] {
			if a.Mean[c][i] != b.Mean[c][i] {
				return false
			}
		}
		for i := range a.Cov[c] {
			if a.Cov[c][i] != b.Cov[c][i] {
				return false
			}
		}
	}
	return true
}

// TestOnlineSplitUpdateFails: an update that makes a chain of the second
// half non-finite fails as the serial one does and leaves the state as it
// was.
func TestOnlineSplitUpdateFails(t *testing.T) {
	m := splitCases()[0].model(t)
	np := m.NumProducts()
	for _, c := range []struct{ min, workers int }{{2, 0}, {2, 7}, {np + 1, 0}} {
		min := c.min
		opts := splitAt(min)
		opts.Workers = c.workers
		o, err := NewOnline(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Advance(1); err != nil {
			t.Fatal(err)
		}
		if err := o.Advance(2); err != nil {
			t.Fatal(err)
		}
		before := o.Save()
		l1, l2 := make([]float64, np), make([]float64, np)
		for k := range l2 {
			l2[k], l1[k] = 1, 3
		}
		l1[np-1], l2[np-1] = 1e308, 1e-300
		if _, err := o.Update(l1, l2); !errors.Is(err, errNonFinite) {
			t.Fatalf("split min %d: error %v, want %v", min, err, errNonFinite)
		}
		if !statesEqual(before, o.Save()) {
			t.Fatalf("split min %d: a failed update changed the state", min)
		}
	}
}

// TestOnlineSplitLeavesNoGoroutine: a split Online's helper goroutines
// end with their passes, while the filter is still in use (a daemon that
// rebuilds its models leaves none behind, whenever the garbage collector
// runs). It waits up to 10 s for the count of goroutines to come back to
// what it was before three split filters each ran passes.
func TestOnlineSplitLeavesNoGoroutine(t *testing.T) {
	m := splitCases()[0].model(t)
	before := runtime.NumGoroutine()
	var keep []*Online
	for i := 0; i < 3; i++ {
		// Seven goroutines a pass whatever the number of cores.
		opts := splitAt(2)
		opts.Workers = 7
		o, err := NewOnline(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Advance(1); err != nil {
			t.Fatal(err)
		}
		if err := o.Advance(2); err != nil {
			t.Fatal(err)
		}
		if o.split == nil {
			t.Fatal("the passes were not split")
		}
		keep = append(keep, o)
	}
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(keep)
	if n > before {
		t.Fatalf("%d goroutines, %d before the filters ran: a split goroutine outlives its pass", n, before)
	}
}
