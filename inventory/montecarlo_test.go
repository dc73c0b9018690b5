package inventory

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gillespie simulates the birth–death chain with piecewise-constant
// rates exactly (event by event) from s0 and records, per path, whether
// it hit 0 and C by the end of each bin, its state at each bin end, and
// its unmet pickups and returns (pickup attempts at 0, return attempts
// at C) over the first n bins.
type mcPath struct {
	emptyBy, fullBy []bool
	end             []int
	unmetP, unmetR  float64
}

func gillespie(rng *rand.Rand, c, s0 int, lambda, mu []float64, path *mcPath) {
	x := s0
	hit0, hitC := x == 0, x == c
	path.unmetP, path.unmetR = 0, 0
	for k := range lambda {
		lt := lambda[k] + mu[k]
		t := 0.0
		for lt > 0 {
			t += rng.ExpFloat64() / lt
			if t >= 1 {
				break
			}
			if rng.Float64()*lt < lambda[k] {
				if x == 0 {
					path.unmetP++
				} else {
					x--
				}
			} else {
				if x == c {
					path.unmetR++
				} else {
					x++
				}
			}
			hit0 = hit0 || x == 0
			hitC = hitC || x == c
		}
		path.emptyBy[k], path.fullBy[k], path.end[k] = hit0, hitC, x
	}
}

// meanSE accumulates a sample mean and its standard error.
type meanSE struct{ n, sum, sum2 float64 }

func (m *meanSE) add(x float64) { m.n++; m.sum += x; m.sum2 += x * x }
func (m *meanSE) mean() float64 { return m.sum / m.n }
func (m *meanSE) se() float64 {
	mu := m.mean()
	return math.Sqrt(math.Max(m.sum2/m.n-mu*mu, 0) / m.n)
}

// within4SE fails unless got is within 4 Monte Carlo standard errors of
// the sample mean. For a probability (prob) the standard error is the
// larger of the sample's and the one implied by got itself, so that an
// event too rare to appear in the sample is still judged.
func within4SE(t *testing.T, what string, i int, got float64, m *meanSE, prob bool) {
	t.Helper()
	se := m.se()
	if prob {
		se = math.Max(se, math.Sqrt(got*(1-got)/m.n))
	}
	if d := math.Abs(got - m.mean()); !(d <= 4*se) {
		t.Errorf("%s[%d] = %.6g, Monte Carlo %.6g ± %.2g (|diff| = %.1f SE)", what, i, got, m.mean(), se, d/se)
	}
}

// dayRates is a commuter-like profile: a morning drain, an evening fill.
func dayRates(h int) (lambda, mu []float64) {
	lambda, mu = make([]float64, h), make([]float64, h)
	for k := range h {
		hour := float64(k % 24)
		lambda[k] = 1 + 6*math.Exp(-(hour-8)*(hour-8)/4) + 2*math.Exp(-(hour-18)*(hour-18)/6)
		mu[k] = 1 + 2*math.Exp(-(hour-9)*(hour-9)/4) + 7*math.Exp(-(hour-18)*(hour-18)/5)
	}
	return lambda, mu
}

// TestTimeVaryingRatesMatchMonteCarlo checks the first-passage and
// marginal probabilities at every h, the unmet counts and UDF(s) at
// several s against an exact event-by-event simulation (Gillespie,
// fixed seed), each within 4 standard errors.
func TestTimeVaryingRatesMatchMonteCarlo(t *testing.T) {
	const c, s0, h, paths = 25, 10, 24, 100000
	lambda, mu := dayRates(h)
	pl, err := NewPlanner(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var r Risk
	if err := pl.RiskAtRates(&r, Station{Capacity: c, Bikes: s0}, lambda, mu); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(26, 1))
	path := mcPath{emptyBy: make([]bool, h), fullBy: make([]bool, h), end: make([]int, h)}
	emptyBy, fullBy := make([]meanSE, h), make([]meanSE, h)
	emptyAt, fullAt := make([]meanSE, h), make([]meanSE, h)
	var up, ur meanSE
	for range paths {
		gillespie(rng, c, s0, lambda, mu, &path)
		for k := range h {
			emptyBy[k].add(b2f(path.emptyBy[k]))
			fullBy[k].add(b2f(path.fullBy[k]))
			emptyAt[k].add(b2f(path.end[k] == 0))
			fullAt[k].add(b2f(path.end[k] == c))
		}
		up.add(path.unmetP)
		ur.add(path.unmetR)
	}
	for k := range h {
		within4SE(t, "EmptyWithin", k+1, r.EmptyWithin[k], &emptyBy[k], true)
		within4SE(t, "FullWithin", k+1, r.FullWithin[k], &fullBy[k], true)
		within4SE(t, "EmptyAt", k+1, r.EmptyAt[k], &emptyAt[k], true)
		within4SE(t, "FullAt", k+1, r.FullAt[k], &fullAt[k], true)
	}
	within4SE(t, "UnmetPickups", h, r.UnmetPickups, &up, false)
	within4SE(t, "UnmetReturns", h, r.UnmetReturns, &ur, false)
	if r.UnmetPickups < 0.05 || r.UnmetReturns < 0.05 || r.EmptyWithin[h-1] < 0.05 || r.FullWithin[h-1] < 0.05 {
		t.Fatalf("the case does not exercise both boundaries: %v", &r)
	}
	for _, s := range []int{0, 4, 13, 21, c} {
		var udf meanSE
		for range paths / 4 {
			gillespie(rng, c, s, lambda, mu, &path)
			udf.add(path.unmetP + path.unmetR)
		}
		within4SE(t, "UDF", s, r.UDF[s], &udf, false)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
