package statusflow

import (
	"math"
	"testing"
)

// bruteMin is E[min(P, R)] by the double sum over the joint law.
func bruteMin(a, b float64) float64 {
	pmf := func(l float64, k int) float64 {
		lg, _ := math.Lgamma(float64(k + 1))
		return math.Exp(float64(k)*math.Log(l) - l - lg)
	}
	s := 0.0
	for i := range 200 {
		for j := range 200 {
			s += float64(min(i, j)) * pmf(a, i) * pmf(b, j)
		}
	}
	return s
}

func TestExpectedMin(t *testing.T) {
	for _, c := range [][2]float64{{0.1, 0.1}, {0.5, 2}, {3, 3}, {20, 15}, {0.01, 40}} {
		got, want := expectedMin(c[0], c[1]), bruteMin(c[0], c[1])
		if math.Abs(got-want) > 1e-9*(1+want) {
			t.Errorf("E[min] at %v: %v, want %v", c, got, want)
		}
	}
	for _, c := range [][2]float64{{0, 1}, {-1, 1}, {math.NaN(), 1}, {math.Inf(1), 1}} {
		if got := expectedMin(c[0], c[1]); got != 0 {
			t.Errorf("E[min] at %v: %v, want 0", c, got)
		}
	}
}

func TestPoissonTail(t *testing.T) {
	for _, tc := range []struct {
		mu   float64
		n    int
		want float64
	}{{2, 0, 1}, {2, 1, 1 - math.Exp(-2)}, {0, 3, 0}, {math.Inf(1), 3, 1}, {1, 3, 1 - math.Exp(-1)*2.5}} {
		if got := poissonTail(tc.mu, tc.n); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("P(Poisson(%v) ≥ %d) = %v, want %v", tc.mu, tc.n, got, tc.want)
		}
	}
}
