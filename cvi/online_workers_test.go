package cvi

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// workersRun is what TestOnlineWorkersIdentical compares: every bin's
// result and 6-bin forecast.
type workersRun struct {
	res        []BinResult
	fm, fv     [][]float64
	localSteps int
}

// runWorkers steps a 300-station city (above the filter's and the point
// loop's split sizes) through 12 bins of regime r on nw workers with the
// points in parts parts.
func runWorkers(t *testing.T, r, nw, parts int) workersRun {
	t.Helper()
	const np = 300
	opts := DefaultOnlineOptions()
	opts.Workers = nw
	on, bins := cityOnlineWith(t, np, 11, DiffusionRoutes{PointParts: parts}, opts)
	bins = regimeBins(bins, r)
	var out workersRun
	for b, obs := range bins[:12] {
		var res BinResult
		if err := on.Step(float64(b+1), obs, &res); err != nil {
			t.Fatal(err)
		}
		fm, fv := make([]float64, np), make([]float64, np)
		if err := on.ForecastSteps(1, 6, fm, fv, nil, func(int) {}); err != nil {
			t.Fatal(err)
		}
		out.res, out.fm, out.fv = append(out.res, res), append(out.fm, fm), append(out.fv, fv)
		out.localSteps += on.localSteps
	}
	return out
}

// sameRun reports the first difference between two runs, "" if none.
func sameRun(a, b workersRun) string {
	for i := range a.res {
		x, y := &a.res[i], &b.res[i]
		for _, c := range []struct {
			name string
			u, v []float64
		}{{"mean", x.Mean, y.Mean}, {"var", x.Var, y.Var}, {"pred mean", x.PredMean, y.PredMean},
			{"pred var", x.PredVar, y.PredVar}, {"nat1", x.Nat1, y.Nat1}, {"nat2", x.Nat2, y.Nat2},
			{"forecast mean", a.fm[i], b.fm[i]}, {"forecast var", a.fv[i], b.fv[i]}} {
			if !slices.Equal(c.u, c.v) {
				return fmt.Sprintf("bin %d: %s differs", i, c.name)
			}
		}
		if x.Steps != y.Steps || x.Converged != y.Converged || x.LogLik != y.LogLik {
			return fmt.Sprintf("bin %d: steps %d/%d, log-likelihood %v/%v", i, x.Steps, y.Steps, x.LogLik, y.LogLik)
		}
	}
	return ""
}

// TestOnlineWorkersIdentical: a bin's results (filtered and predicted
// marginals, sites, steps, log-likelihood) and 6-bin forecasts are the
// same bit for bit on 1, 2 and 7 workers, with the points in the default
// two parts and in five, in a busy censored regime and a quiet one; and
// no goroutine outlives the steps.
func TestOnlineWorkersIdentical(t *testing.T) {
	before := runtime.NumGoroutine()
	for r, regime := range cityRegimes[:2] {
		for _, parts := range []int{2, 5} {
			t.Run(fmt.Sprintf("%s/parts=%d", regime.name, parts), func(t *testing.T) {
				ref := runWorkers(t, r, 1, parts)
				for _, nw := range []int{2, 7} {
					if d := sameRun(ref, runWorkers(t, r, nw, parts)); d != "" {
						t.Fatalf("%d workers against 1: %s", nw, d)
					}
				}
			})
		}
	}
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if n > before {
		t.Fatalf("%d goroutines, %d before the Onlines stepped: a worker outlives its pass", n, before)
	}
}

// TestPointPartsMatch: the points in five parts give the two parts'
// filtered marginals to 1e-9 (the same terms summed in another order).
func TestPointPartsMatch(t *testing.T) {
	for r, regime := range cityRegimes[:2] {
		t.Run(regime.name, func(t *testing.T) {
			a, b := runWorkers(t, r, 2, 2), runWorkers(t, r, 2, 5)
			var worstM, worstV float64
			for i := range a.res {
				m, v := marginalGap(&a.res[i], &b.res[i])
				worstM, worstV = max(worstM, m), max(worstV, v)
			}
			t.Logf("means within %.2g sd, variances %.2g", worstM, worstV)
			if worstM > 1e-9 || worstV > 1e-9 {
				t.Fatalf("five parts against two: means %.3g sd, variances %.3g apart", worstM, worstV)
			}
		})
	}
}

// TestOnlineOneWorkerAllocs: on one worker a warm bin of a city above the
// split sizes (its points in parts, its filter passes in pieces) and its
// 6-bin forecast allocate nothing.
func TestOnlineOneWorkerAllocs(t *testing.T) {
	const np = 300
	opts := DefaultOnlineOptions()
	opts.Workers = 1
	on, bins := cityOnlineWith(t, np, 5, DiffusionRoutes{}, opts)
	var res BinResult
	fm, fv := make([]float64, np), make([]float64, np)
	b := 0
	step := func() {
		if err := on.Step(float64(b+1), bins[b%len(bins)], &res); err != nil {
			t.Fatal(err)
		}
		if err := on.ForecastSteps(1, 6, fm, fv, nil, func(int) {}); err != nil {
			t.Fatal(err)
		}
		b++
	}
	for b < 40 {
		step()
	}
	if d := on.lik.(*Diffusion); d.mf.split == nil {
		t.Fatal("the points were not split")
	}
	if a := testing.AllocsPerRun(20, step); a != 0 {
		t.Errorf("%v allocations per bin", a)
	}
}
