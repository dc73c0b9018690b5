package backtest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/optimize"
)

// censoredNormal draws n values of N(mu, sigma²) censored at supplies
// drawn uniformly from [lo, hi] (fixed seed).
func censoredNormal(seed uint64, n int, mu, sigma, lo, hi float64) ([]float64, []bool) {
	rng := rand.New(rand.NewPCG(seed, 1))
	x, cens := make([]float64, n), make([]bool, n)
	for i := range x {
		v, u := mu+sigma*rng.NormFloat64(), lo+(hi-lo)*rng.Float64()
		x[i], cens[i] = math.Min(v, u), v > u
	}
	return x, cens
}

// censoredMLE maximises the right-censored normal log-likelihood
// Σ log φ((x−μ)/σ)/σ over uncensored values + Σ log(1 − Φ((b−μ)/σ)) over
// censored ones directly (Nelder–Mead on μ, log σ; the survival from
// math.Erfc), an independent route to emNormal's fixed point.
func censoredMLE(t *testing.T, x []float64, cens []bool, mu0, sigma0 float64) (mu, sigma float64) {
	t.Helper()
	nll := func(p []float64) float64 {
		mu, s := p[0], math.Exp(p[1])
		var l float64
		for i, v := range x {
			z := (v - mu) / s
			if cens[i] {
				l += math.Log(0.5 * math.Erfc(z/math.Sqrt2))
			} else {
				l += -0.5*z*z - math.Log(s) - 0.5*math.Log(2*math.Pi)
			}
		}
		return -l
	}
	res, err := optimize.Minimize(optimize.Problem{Func: nll}, []float64{mu0, math.Log(sigma0)},
		&optimize.Settings{FuncEvaluations: 100000}, &optimize.NelderMead{})
	if err != nil {
		t.Fatal(err)
	}
	// Polish with a second start at the optimum (Nelder–Mead restarts).
	res, err = optimize.Minimize(optimize.Problem{Func: nll}, res.X, &optimize.Settings{FuncEvaluations: 100000}, &optimize.NelderMead{})
	if err != nil {
		t.Fatal(err)
	}
	return res.X[0], math.Exp(res.X[1])
}

// TestEMIsCensoredMLE: EM unconstraining's estimate is the censored-normal
// maximum-likelihood estimate found by direct numerical maximisation, on
// simulated censored normal samples (fixed seeds; 20% to 70% censored),
// to 1e-7 relative in μ and σ (gaps of 7e-10 to 3e-8 measured, the
// precision of the Nelder–Mead route).
func TestEMIsCensoredMLE(t *testing.T) {
	for _, c := range []struct {
		seed        uint64
		n           int
		mu, sigma   float64
		lo, hi      float64
		minCensFrac float64
		maxCensFrac float64
	}{
		{1, 400, 10, 3, 8, 16, 0.15, 0.4},
		{2, 200, 10, 3, 6, 11, 0.5, 0.8},
		{3, 30, 5, 2, 3, 8, 0.1, 0.7},
	} {
		x, cens := censoredNormal(c.seed, c.n, c.mu, c.sigma, c.lo, c.hi)
		nc := 0
		for _, b := range cens {
			if b {
				nc++
			}
		}
		if f := float64(nc) / float64(c.n); f < c.minCensFrac || f > c.maxCensFrac {
			t.Fatalf("seed %d: %.2f censored, want %v..%v", c.seed, f, c.minCensFrac, c.maxCensFrac)
		}
		mu, sigma, ok := emNormal(x, cens)
		if !ok {
			t.Fatalf("seed %d: no EM estimate", c.seed)
		}
		wm, ws := censoredMLE(t, x, cens, c.mu, c.sigma)
		t.Logf("seed %d: relative gaps μ %.1e σ %.1e", c.seed, math.Abs(mu-wm)/math.Abs(wm), math.Abs(sigma-ws)/ws)
		if math.Abs(mu-wm) > 1e-7*math.Abs(wm) || math.Abs(sigma-ws) > 1e-7*ws {
			t.Errorf("seed %d (%d of %d censored): EM μ %.9g σ %.9g, direct MLE μ %.9g σ %.9g", c.seed, nc, c.n, mu, sigma, wm, ws)
		}
		// The naive estimate (censored values as observed) is biased low:
		// the test would catch an EM that did nothing.
		if m0, _ := moments(x, float64(len(x))); !(mu > m0+0.1) {
			t.Errorf("seed %d: EM μ %v not above the censored sample's mean %v", c.seed, mu, m0)
		}
	}
	if _, _, ok := emNormal([]float64{3, 4, 5}, []bool{true, false, true}); ok {
		t.Error("EM with one uncensored value must report no estimate")
	}
}

// TestPDClosedForm: Projection-Detruncation's value against its closed
// forms, d = μ + σ·Φ⁻¹(1 − τ/2) for a sale at the mean (P(X ≥ b) = 1/2)
// and d = b for τ = 1, to 1e-12; and its fit is a fixed point: the
// completed sample's mean and spread reproduce μ and σ to 1e-9.
func TestPDClosedForm(t *testing.T) {
	const q75, q90 = 0.6744897501960817, 1.2815515655446004 // Φ⁻¹(0.75), Φ⁻¹(0.9)
	for _, c := range []struct{ b, mu, sigma, tau, want float64 }{
		{10, 10, 2, 0.5, 10 + 2*q75},
		{-1, -1, 0.5, 0.2, -1 + 0.5*q90},
		{12.5, 10, 2, 1, 12.5},
	} {
		if got := detruncate(c.b, c.mu, c.sigma, c.tau); math.Abs(got-c.want) > 1e-12*math.Max(1, math.Abs(c.want)) {
			t.Errorf("detruncate(%v; N(%v, %v²), τ %v) = %.15g, want %.15g", c.b, c.mu, c.sigma, c.tau, got, c.want)
		}
	}
	if d := detruncate(60, 10, 2, 0.5); !(d >= 60 && d < 60.1) {
		t.Errorf("25 sd into the tail: d = %v, want just above 60", d)
	}
	x, cens := censoredNormal(4, 100, 10, 3, 7, 14)
	mu, sigma := pdNormal(x, cens, pdTau)
	d := append([]float64(nil), x...)
	for i := range d {
		if cens[i] {
			d[i] = detruncate(x[i], mu, sigma, pdTau)
		}
	}
	if m, s := moments(d, float64(len(d))); math.Abs(m-mu) > 1e-9*mu || math.Abs(s-sigma) > 1e-9*sigma {
		t.Errorf("PD fit μ %v σ %v is not its fixed point: the completed sample gives %v, %v", mu, sigma, m, s)
	}
}

// TestUnconstrainSample: the sample is the product's bins of the week
// back from t (t included), the bins of the day where fewer than two of
// those are uncensored.
func TestUnconstrainSample(t *testing.T) {
	const week = 168
	g := testGrid(3*week, map[int]bool{2*week + 5: true})
	u := unconstrainSample{season: season{g: g, day: 24, week: week}, weeks: 3}
	x, _ := u.sample(2*week+5, 0, nil, nil)
	if want := []float64{2*week + 5, week + 5, 5}; !slices.Equal(x, want) {
		t.Errorf("weekly sample %v, want %v", x, want)
	}
	g.Censored[5][0] = true // now one uncensored: fall back to the days
	x, _ = u.sample(2*week+5, 0, nil, nil)
	if len(x) != 15 || x[1] != 2*week+5-24 || x[14] != 5 {
		t.Errorf("daily sample %v, want the 15 bins back from %d by 24 to the first day", x, 2*week+5)
	}
}
