package backtest

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// testGrid is a 1-product hourly grid with y[i] = i (censored where
// cens says).
func testGrid(n int, cens map[int]bool) *Grid {
	g := &Grid{Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Width: time.Hour, Products: []string{"a"},
		Y: nanMatrix(n, 1), Supply: fillMatrix(n, 1, math.Inf(1)), Censored: boolMatrix(n, 1), Truth: nanMatrix(n, 1)}
	for i := 0; i < n; i++ {
		g.Y[i][0], g.Truth[i][0], g.Censored[i][0] = float64(i), float64(i), cens[i]
	}
	return g
}

// TestBaselines: the baselines take the documented cells, from the
// observed series, never after the origin.
func TestBaselines(t *testing.T) {
	const week = 168
	s := season{g: testGrid(5*week, map[int]bool{500 - week: true}), day: 24, week: week}
	t0 := 600
	for _, c := range []struct {
		name     string
		f        forecaster
		h        int
		wantMean float64
	}{
		{"seasonal naive h=1", seasonalNaive{s}, 1, 601 - week},
		{"seasonal naive h=24", seasonalNaive{s}, 24, 624 - week},
		// last bin 600, yesterday 601-24, weeks 601-168·{1,2,3}
		{"hm h=1", historicalMean{s}, 1, (600 + 577 + 433 + 265 + 97) / 5.0},
		// h=24: the target's bin the day before is the origin, already
		// C1; P1 is the day before it, T3 the weeks before t
		{"hm h=24", historicalMean{s}, 24, (600 + 576 + 456 + 288 + 120) / 5.0},
		// h=168: the target's bin a week before is the origin; P1 and
		// T3 strictly before it
		{"hm h=168", historicalMean{s}, 168, (600 + 576 + 432 + 264 + 96) / 5.0},
		// h=150: P1 (the target's bin 7 days back, 600-18) is T3's
		// first bin, taken once
		{"hm h=150", historicalMean{s}, 150, (600 + 582 + 414 + 246) / 4.0},
		// K=4 weeks back from 668-168=500: 500, 332 (censored), 164; -4 is before the data
		{"bow h=68", binOfWeekMean{s, 4}, 68, (500 + 164) / 2.0},
	} {
		m, sd := c.f.predict(t0, c.h, 0)
		if m != c.wantMean {
			t.Errorf("%s: mean %v, want %v", c.name, m, c.wantMean)
		}
		if c.name[:2] == "se" && sd != 0 {
			t.Errorf("%s: seasonal naive is a point forecast, sd %v", c.name, sd)
		}
	}
}

// TestCRPSGaussian against a numerical integral of (F(x) − 1{x ≥ y})²
// (midpoint rule, step ≤ 1e-3 sd, over ±12 sd and y; tolerance 1e-6).
func TestCRPSGaussian(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		m, s, y := rng.NormFloat64()*5, 0.1+rng.Float64()*4, rng.NormFloat64()*5
		// Midpoint rule on each side of y, where the integrand jumps.
		lo, hi := math.Min(m-12*s, y), math.Max(m+12*s, y)
		var sum float64
		for _, seg := range [][2]float64{{lo, y}, {y, hi}} {
			n := int(math.Ceil((seg[1] - seg[0]) / (1e-3 * s)))
			step := (seg[1] - seg[0]) / float64(max(n, 1))
			for j := 0; j < n; j++ {
				x := seg[0] + (float64(j)+0.5)*step
				f := 0.5 * math.Erfc(-(x-m)/(s*math.Sqrt2))
				if x >= y {
					f--
				}
				sum += f * f * step
			}
		}
		if math.Abs(sum-crpsGaussian(m, s, y)) > 1e-6*math.Max(1, sum) {
			t.Errorf("N(%v,%v²) at %v: closed form %v, integral %v", m, s, y, crpsGaussian(m, s, y), sum)
		}
	}
	if crpsGaussian(2, 0, 5) != 3 {
		t.Error("a point forecast's CRPS is its absolute error")
	}
}

// TestCRPSClampedGaussian checks the CRPS of max(f, 0), f ~ N(m, s²),
// against a numerical integral of (F(x) − 1{x ≥ y})² with F the clamped
// variable's distribution function (0 below 0; midpoint rule, step ≤
// 1e-3 sd; tolerance 1e-6), for means from well below 0 to well above and
// truths at, above and below 0; and against a Monte Carlo estimate of
// E|X − y| − E|X − X'|/2 (fixed seed, 400,000 pairs; tolerance 4 standard
// errors).
func TestCRPSClampedGaussian(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cdf := func(x, m, s float64) float64 {
		if x < 0 {
			return 0
		}
		return 0.5 * math.Erfc(-(x-m)/(s*math.Sqrt2))
	}
	integral := func(m, s, y float64) float64 {
		lo, hi := math.Min(math.Min(m-12*s, y), 0), math.Max(m+12*s, y)
		var sum float64
		for _, seg := range [][2]float64{{lo, math.Min(0, y)}, {math.Min(0, y), math.Max(0, y)}, {math.Max(0, y), hi}} {
			n := int(math.Ceil((seg[1] - seg[0]) / (1e-3 * s)))
			step := (seg[1] - seg[0]) / float64(max(n, 1))
			for j := 0; j < n; j++ {
				x := seg[0] + (float64(j)+0.5)*step
				f := cdf(x, m, s)
				if x >= y {
					f--
				}
				sum += f * f * step
			}
		}
		return sum
	}
	cases := [][3]float64{{0, 1, 0}, {0.3, 0.8, 0}, {-2, 1, 0}, {-2, 1, 3}, {5, 1, 0}, {2, 3, 1.5}, {-40, 0.5, 0}, {1, 2, -0.5}}
	for i := 0; i < 20; i++ {
		cases = append(cases, [3]float64{rng.NormFloat64() * 4, 0.1 + rng.Float64()*4, math.Abs(rng.NormFloat64() * 4)})
	}
	for _, c := range cases {
		m, s, y := c[0], c[1], c[2]
		got, want := crpsClampedGaussian(m, s, y), integral(m, s, y)
		if math.Abs(got-want) > 1e-6*math.Max(1, want) {
			t.Errorf("max(N(%v,%v²), 0) at %v: closed form %v, integral %v", m, s, y, got, want)
		}
		if y >= 0 && got > crpsGaussian(m, s, y)+1e-12 {
			t.Errorf("max(N(%v,%v²), 0) at %v: %v above the Gaussian's %v", m, s, y, got, crpsGaussian(m, s, y))
		}
	}
	for _, c := range [][3]float64{{0.5, 1.5, 0}, {2, 1, 3}} {
		m, s, y := c[0], c[1], c[2]
		const n = 400000
		var sum, sumSq float64
		for j := 0; j < n; j++ {
			x1, x2 := math.Max(m+s*rng.NormFloat64(), 0), math.Max(m+s*rng.NormFloat64(), 0)
			v := math.Abs(x1-y) - math.Abs(x1-x2)/2
			sum += v
			sumSq += v * v
		}
		mc := sum / n
		se := math.Sqrt((sumSq/n - mc*mc) / n)
		if got := crpsClampedGaussian(m, s, y); math.Abs(got-mc) > 4*se {
			t.Errorf("max(N(%v,%v²), 0) at %v: closed form %v, Monte Carlo %v ± %v", m, s, y, got, mc, se)
		}
	}
	if crpsClampedGaussian(-2, 0, 1) != 1 {
		t.Error("a point forecast's CRPS is the absolute error of max(mean, 0)")
	}
}

// FuzzReadTruth: any input gives a truth grid or an error, never a panic
// and never a negative or non-finite truth.
func FuzzReadTruth(f *testing.F) {
	f.Add([]byte("time,product,true_demand\n2024-01-01T00:00:00Z,a,3\n"))
	f.Add([]byte("time,product,true_demand,rate\n2024-01-01T01:00:00Z,a,1e308,1\n2024-01-01T01:10:00Z,a,2,1\n"))
	f.Add([]byte("product,time,true_demand\na,473352,NaN\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := testGrid(3, nil)
		if err := ReadTruth(bytes.NewReader(data), "fuzz", g); err != nil {
			return
		}
		for _, row := range g.Truth {
			for _, v := range row {
				if !math.IsNaN(v) && (v < 0 || math.IsInf(v, 0)) {
					t.Fatalf("truth %v accepted", v)
				}
			}
		}
	})
}
