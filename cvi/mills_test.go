package cvi

import (
	"math"
	"testing"
)

// TestSurvivalFast: the Mills-ratio evaluation agrees with survival to
// 1e-13 relative (λ − z to 1e-13 of λ) on a fine grid across its range and
// is survival itself outside it.
func TestSurvivalFast(t *testing.T) {
	var worst [3]float64
	for i := -1700; i <= 1700; i++ {
		z := float64(i)*0.005 + 1e-4*math.Sin(float64(i))
		l, lam, r := survivalFast(z)
		lw, lamw, rw := survival(z)
		errs := [3]float64{
			math.Abs(l-lw) / math.Abs(lw),
			math.Abs(lam-lamw) / lamw,
			math.Abs(r-rw) / math.Max(lamw, math.Abs(rw)),
		}
		for k, e := range errs {
			if !(e <= 1e-13) {
				t.Fatalf("z = %v: fast (%v, %v, %v), survival (%v, %v, %v)", z, l, lam, r, lw, lamw, rw)
			}
			worst[k] = math.Max(worst[k], e)
		}
	}
	t.Logf("largest relative differences: log Q %.2g, λ %.2g, λ − z %.2g", worst[0], worst[1], worst[2])
	for _, z := range []float64{-40, -8, 8, 12, math.Inf(1), math.Inf(-1)} {
		l, lam, r := survivalFast(z)
		lw, lamw, rw := survival(z)
		if l != lw || lam != lamw || r != rw {
			t.Errorf("z = %v: fast (%v, %v, %v), survival (%v, %v, %v)", z, l, lam, r, lw, lamw, rw)
		}
	}
}

func BenchmarkSurvival(b *testing.B) {
	for _, fn := range []struct {
		name string
		f    func(float64) (float64, float64, float64)
	}{{"survival", survival}, {"fast", survivalFast}} {
		b.Run(fn.name, func(b *testing.B) {
			var s float64
			for i := 0; i < b.N; i++ {
				z := -6 + 7*float64(i%1024)/1024
				l, lam, _ := fn.f(z)
				s += l + lam
			}
			_ = s
		})
	}
}

// TestExpNeg: expNeg is within 8 ulp of math.Exp on [−700, 0].
func TestExpNeg(t *testing.T) {
	var worst float64
	for i := 0; i <= 1000000; i++ {
		x := -40 * float64(i) / 1000000
		if i%10 == 0 {
			x = -700 * float64(i) / 1000000
		}
		got, want := expNeg(x), math.Exp(x)
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	t.Logf("largest relative difference %.2g", worst)
	if worst > 8*0x1p-52 {
		t.Errorf("expNeg is %.2g (relative) from math.Exp", worst)
	}
}

// TestLog1m: log1m agrees with math.Log1p(−p) to 1e-14 relative over
// 1e-300 ≤ p ≤ ½ (evenly in log p, and evenly in p over each interval of
// the table, its ends included).
func TestLog1m(t *testing.T) {
	var worst float64
	check := func(p float64) {
		got, want := log1m(p), math.Log1p(-p)
		e := math.Abs(got-want) / math.Abs(want)
		if !(e <= 1e-14) {
			t.Fatalf("p = %v: %v, Log1p %v (relative %.3g)", p, got, want, e)
		}
		worst = math.Max(worst, e)
	}
	for i := 0; i <= 100000; i++ {
		check(math.Exp(math.Log(1e-300) + (math.Log(0.5)-math.Log(1e-300))*float64(i)/100000))
		check(0.5 * float64(i+1) / 100001)
	}
	check(0.5)
	t.Logf("largest relative difference %.2g", worst)
}

// TestLogMills: logMills agrees with log M = −log λ (InvMills) to 1e-14
// of max(|log M|, 1) over [0, millsMax).
func TestLogMills(t *testing.T) {
	var worst float64
	for i := 0; i < 160000; i++ {
		z := millsMax * float64(i) / 160000
		got, want := logMills(z), -math.Log(InvMills(z))
		e := math.Abs(got-want) / math.Max(math.Abs(want), 1)
		if !(e <= 1e-14) {
			t.Fatalf("z = %v: %v, −log λ %v (relative %.3g)", z, got, want, e)
		}
		worst = math.Max(worst, e)
	}
	t.Logf("largest difference %.2g", worst)
}
