package inventory

import (
	"math"
	"slices"
	"testing"
)

// TestTruncGaussMoments checks truncGauss against the truncated
// normal's moments in closed form: E[Z^j; a < Z < b] by the recurrence
// M_j = (j−1)M_{j−2} + a^{j−1}φ(a) − b^{j−1}φ(b), for j ≤ 2n − 1, over
// whole, half and finite intervals and n = 1..6; and the whole line
// against Gauss–Hermite.
func TestTruncGaussMoments(t *testing.T) {
	cases := []struct{ a, b float64 }{{math.Inf(-1), math.Inf(1)}, {0.3, math.Inf(1)}, {math.Inf(-1), -1.2}, {-0.7, 0.4}, {2.5, 6}, {-4, -3.9}}
	for _, c := range cases {
		for n := 1; n <= 6; n++ {
			var z, w [maxGauss]float64
			got := truncGauss(c.a, c.b, n, z[:], w[:])
			if got != n {
				t.Fatalf("(%v, %v) n %d: %d nodes", c.a, c.b, n, got)
			}
			a, b := math.Max(c.a, -normReach), math.Min(c.b, normReach)
			m := []float64{normProb(a, b), normPDF(a) - normPDF(b)}
			for j := 2; j < 2*n; j++ {
				m = append(m, float64(j-1)*m[j-2]+math.Pow(a, float64(j-1))*normPDF(a)-math.Pow(b, float64(j-1))*normPDF(b))
			}
			for j := range 2 * n {
				s := 0.0
				for i := range n {
					s += w[i] * math.Pow(z[i], float64(j))
				}
				scale := math.Max(math.Abs(m[j]), m[0]*math.Pow(math.Max(math.Abs(a), math.Abs(b))+1, float64(j))*1e-3)
				if math.Abs(s-m[j]) > 1e-10*scale+1e-15 {
					t.Errorf("(%v, %v) n %d: moment %d = %.15g, want %.15g", c.a, c.b, n, j, s, m[j])
				}
			}
		}
	}
	z, w := normalRule(5)
	var tz, tw [maxGauss]float64
	truncGauss(math.Inf(-1), math.Inf(1), 5, tz[:], tw[:])
	for i := range z {
		if math.Abs(z[i]-tz[i]) > 1e-9 || math.Abs(w[i]-tw[i]) > 1e-9 {
			t.Errorf("node %d: (%v, %v), Gauss–Hermite (%v, %v)", i, tz[i], tw[i], z[i], w[i])
		}
	}
}

// TestPairsPruned: the grid leaves out at most pruneMass of weight, the
// kept weights sum to 1, and on the quiet station (ρ = 1, sd
// 1.5) it drops pairs yet moves no probability by more than 2·pruneMass
// from the whole grid's outlook.
func TestPairsPruned(t *testing.T) {
	h := 24
	f := Forecast{Mean: flat(h, 0.5), Var: flat(h, 2.25)}
	st := Station{Capacity: 15, Bikes: 3}
	pl, err := NewPlanner(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var r Risk
	if err := pl.Risk(&r, st, f, f); err != nil {
		t.Fatal(err)
	}
	ps := pl.pairs()
	full := len(pl.lr.ws) * len(pl.mr.ws)
	sum := 0.0
	for _, p := range ps {
		sum += p.w
	}
	if math.Abs(sum-1) > 1e-12 || len(ps) >= full {
		t.Fatalf("%d of %d pairs kept, weights sum to %v", len(ps), full, sum)
	}
	// The whole grid, summed here with another Planner's chain.
	zl, wl := slices.Clone(pl.lr.zs), slices.Clone(pl.lr.ws)
	zm, wm := slices.Clone(pl.mr.zs), slices.Clone(pl.mr.ws)
	plug, err := NewPlanner(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	lam, mu := make([]float64, h), make([]float64, h)
	var one Risk
	want := make([]float64, 2*h)
	for i, a := range zl {
		for j, b := range zm {
			for k := range h {
				lam[k] = math.Max(0.5+1.5*a, 0)
				mu[k] = math.Max(0.5+1.5*b, 0)
			}
			if err := plug.RiskAtRates(&one, st, lam, mu); err != nil {
				t.Fatal(err)
			}
			for k := range h {
				want[k] += wl[i] * wm[j] * one.EmptyWithin[k]
				want[h+k] += wl[i] * wm[j] * one.FullWithin[k]
			}
		}
	}
	for k := range h {
		check(t, "EmptyWithin", k+1, r.EmptyWithin[k], want[k], 2*pruneMass)
		check(t, "FullWithin", k+1, r.FullWithin[k], want[h+k], 2*pruneMass)
	}
	t.Logf("%d of %d pairs kept", len(ps), full)
}
