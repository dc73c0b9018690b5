package mathx

import (
	"math"
	"testing"
)

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
}

func TestSoftplus(t *testing.T) {
	for _, x := range []float64{-800, -40, -3, -0.2, 0, 0.7, 5, 50, 800} {
		v, slope := SoftplusSlope(x)
		if Softplus(x) != v {
			t.Errorf("Softplus(%v) = %v, SoftplusSlope %v", x, Softplus(x), v)
		}
		if x > -700 && !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("Softplus(%v) = %v", x, v)
		}
		if want := 1 / (1 + math.Exp(-x)); relErr(slope, want) > 1e-15 {
			t.Errorf("slope at %v = %v, sigmoid %v", x, slope, want)
		}
		if x > -30 && x < 30 {
			if want := math.Log(1 + math.Exp(x)); relErr(v, want) > 1e-13 {
				t.Errorf("Softplus(%v) = %v, log(1+eˣ) = %v", x, v, want)
			}
		}
		if x > -700 {
			if back := SoftplusInv(v); relErr(back, x) > 1e-12 && math.Abs(back-x) > 1e-12 {
				t.Errorf("SoftplusInv(Softplus(%v)) = %v", x, back)
			}
		}
	}
	for _, v := range []float64{1e-300, 1e-8, 0.03, 1, 1e300} {
		if back := Softplus(SoftplusInv(v)); relErr(back, v) > 1e-12 {
			t.Errorf("Softplus(SoftplusInv(%v)) = %v", v, back)
		}
	}
	for _, bad := range []float64{0, -1, math.NaN()} {
		if !math.IsNaN(SoftplusInv(bad)) {
			t.Errorf("SoftplusInv(%v) = %v, want NaN", bad, SoftplusInv(bad))
		}
	}
}
