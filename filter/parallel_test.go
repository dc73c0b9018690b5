package filter

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// forced is a Posterior of nw workers (0: GOMAXPROCS) whose every run of
// independent chains goes parallel, however small.
func forced(nw int) Posterior { return Posterior{Workers: nw, MinParallelWork: 1} }

// parallelCases are the independent-chain models of the parallel tests:
// the unrolled two-state chains, dense chains of a shared composite
// kernel (which keeps scratch: every worker needs its own copy), and
// per-product kernels, distinct or one kernel for several products (which
// must stay serial).
func parallelCases() []testCase {
	return []testCase{
		{"matern32/indep5 (two-state)", indepModel(m32(0.9, 1.7), 5), false},
		{"matern52+periodic3/indep5 (dense)", func(t *testing.T) *Model {
			must := mustT(t)
			sum := must(kernel.NewSum(must(kernel.NewMatern52(1.1, 2.0)), must(kernel.NewPeriodic(0.8, 1.0, 7.0, 3))))
			m, err := NewModel(sum, nil, nil, 5)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}, false},
		{"per-product/3", perProductModel(), false},
		{"per-product/one sum for two products", func(t *testing.T) *Model {
			must := mustT(t)
			sum := must(kernel.NewSum(must(kernel.NewMatern32(1.1, 2.0)), must(kernel.NewPeriodic(0.8, 1.0, 7.0, 2))))
			m, err := NewIndependentModel([]kernel.Temporal{sum, must(kernel.NewMatern52(0.7, 1.0)), sum})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}, false},
	}
}

// runModes are the four batch runs; shared ones keep one chain's storage
// per worker.
var runModes = []struct {
	name   string
	run    func(*Posterior, *Model, []float64, *Sites) error
	shared bool
}{
	{"Filter", Filter, false},
	{"Smooth", Smooth, false},
	{"SmoothMarginals", SmoothMarginals, true},
	{"FilterLogLik", FilterLogLik, true},
}

// TestParallelChainsMatchSerial: runs of independent chains on several
// goroutines give the serial run's numbers and predictions bit for bit,
// on every run mode, from the stationary prior and from a saved state,
// for any number of workers (set by Workers or by GOMAXPROCS), and
// keep at most one chain's storage per worker in the shared modes.
func TestParallelChainsMatchSerial(t *testing.T) {
	// Not parallel: it sets GOMAXPROCS.
	for _, tc := range parallelCases() {
		rng := rand.New(rand.NewPCG(3, 17))
		m := tc.model(t)
		np := m.NumProducts()
		times := randomTimes(rng, 50, 20)
		s := randomSites(rng, len(times), np, false, 0.2)
		const w = 20
		started, err := m.WithStart(times[w-1], onlinePrefix(t, m, times, s, w).Save())
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range []struct {
			name  string
			m     *Model
			times []float64
			s     *Sites
		}{{"", m, times, s}, {"/started", started, times[w:], sitesFrom(s, w)}} {
			for _, mode := range runModes {
				t.Run(tc.name+run.name+"/"+mode.name, func(t *testing.T) {
					ref := forced(1)
					if err := mode.run(&ref, run.m, run.times, run.s); err != nil {
						t.Fatal(err)
					}
					for _, nw := range []int{2, 3, np + 2} {
						p := forced(nw)
						// Twice: the second run reuses the workers' buffers.
						for range 2 {
							if err := mode.run(&p, run.m, run.times, run.s); err != nil {
								t.Fatal(err)
							}
							samePosterior(t, &p, &ref, run.times)
						}
						want := min(nw, np)
						if run.m.perProduct != nil && !run.m.distinct {
							want = 1 // serial
						}
						if mode.shared && len(p.chains) != want {
							t.Errorf("%d workers kept %d chains, want %d", nw, len(p.chains), want)
						}
					}
					// Workers 0: as many as GOMAXPROCS.
					for _, procs := range []int{1, 2} {
						old := runtime.GOMAXPROCS(procs)
						p := forced(0)
						err := mode.run(&p, run.m, run.times, run.s)
						runtime.GOMAXPROCS(old)
						if err != nil {
							t.Fatal(err)
						}
						samePosterior(t, &p, &ref, run.times)
					}
				})
			}
		}
	}
}

// samePosterior fails unless p holds ref's numbers bit for bit, and, if
// ref can predict, p predicts as ref does.
func samePosterior(t *testing.T, p, ref *Posterior, times []float64) {
	t.Helper()
	if math.Float64bits(p.LogLik) != math.Float64bits(ref.LogLik) {
		t.Fatalf("log Z̃ %.17g, serial %.17g", p.LogLik, ref.LogLik)
	}
	if p.Cov != nil {
		t.Fatal("Cov set for independent chains")
	}
	sameBits(t, "mean", p.Mean, ref.Mean)
	sameBits(t, "var", p.Var, ref.Var)
	if ref.marginalOnly {
		return
	}
	np := ref.NP
	a, b := make([]float64, np+np*np), make([]float64, np+np*np)
	for _, tt := range []float64{times[0] - 0.1, 0.5 * (times[3] + times[4]), times[len(times)-1] + 0.7} {
		if err := p.Predict(tt, a[:np], a[np:]); err != nil {
			t.Fatal(err)
		}
		if err := ref.Predict(tt, b[:np], b[np:]); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "prediction", a, b)
	}
}

func sameBits(t *testing.T, name string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, serial %d", name, len(got), len(want))
	}
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s[%d] = %.17g, serial %.17g", name, i, got[i], want[i])
		}
	}
}

// TestParallelChainsFirstError: when several products' chains fail, a
// parallel run returns the first failing product's error, as the serial
// loop does.
func TestParallelChainsFirstError(t *testing.T) {
	t.Parallel()
	ks := make([]kernel.Temporal, 6)
	for k := range ks {
		v := 1.0
		if k == 2 || k == 4 {
			v = 1e300 // log Z̃ overflows
		}
		var err error
		if ks[k], err = kernel.NewMatern32(v, 1); err != nil {
			t.Fatal(err)
		}
	}
	m, err := NewIndependentModel(ks)
	if err != nil {
		t.Fatal(err)
	}
	times := []float64{0, 1, 2, 3}
	s := NewSites(len(times), len(ks), false)
	for n := range times {
		for k := range ks {
			y := 1.0
			if k == 2 || k == 4 {
				y = 1e300
			}
			s.SetGaussian(n, k, y, 1)
		}
	}
	for _, mode := range runModes {
		ref := forced(1)
		want := mode.run(&ref, m, times, s)
		if want == nil || !strings.Contains(want.Error(), "product 2") {
			t.Fatalf("%s serial: got %v, want product 2's error", mode.name, want)
		}
		for _, nw := range []int{2, 4} {
			p := forced(nw)
			err := mode.run(&p, m, times, s)
			if !errors.Is(err, ErrNumerical) || err.Error() != want.Error() {
				t.Errorf("%s with %d workers: got %v, want %v", mode.name, nw, err, want)
			}
		}
	}
}

// TestSmallIndependentRunsStaySerial: runs below MinParallelWork's default start no
// goroutines, so dense chains, once sized, allocate nothing (a parallel
// run copies the shared kernel).
func TestSmallIndependentRunsStaySerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	m := parallelCases()[1].model(t) // dense chains of dimension 11
	np := m.NumProducts()
	times := randomTimes(rng, 60, 20)
	s := randomSites(rng, len(times), np, false, 0.2)
	var p Posterior
	if nw := p.chainWorkers(m, len(times), true); nw != 1 {
		t.Fatalf("%d workers for a small run, want 1", nw)
	}
	for _, mode := range runModes {
		if err := mode.run(&p, m, times, s); err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(5, func() { _ = mode.run(&p, m, times, s) }); a != 0 {
			t.Errorf("%s allocates %v times per run", mode.name, a)
		}
	}
}
