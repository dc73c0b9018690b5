package statusflow

import "math"

// expectedMin is E[min(P, R)] for independent P ~ Poisson(a) and
// R ~ Poisson(b): the expected number of pickup–return pairs inside one
// poll interval, which cancel in the net change of the bike count. It is
// Σ_{k≥1} P(P ≥ k)·P(R ≥ k), summed until a tail is negligible.
func expectedMin(a, b float64) float64 {
	if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return 0
	}
	pa, pb := math.Exp(-a), math.Exp(-b) // P(P = k), P(R = k) at k = 0
	sa, sb := 1-pa, 1-pb                 // P(P ≥ 1), P(R ≥ 1)
	sum := 0.0
	limit := int(min(a, b)+10*math.Sqrt(min(a, b))) + 50
	for k := 1; k <= limit; k++ {
		sum += sa * sb
		pa *= a / float64(k)
		pb *= b / float64(k)
		sa -= pa
		sb -= pb
		if sa*sb < 1e-12 {
			break
		}
	}
	return sum
}

// hiddenItem is one interval's share in a bin's hidden-pair estimate:
// its length in hours and the weight of a pair (1 from counts; with
// vehicle ids only a return whose very bike is then picked up hides, so
// about 1/(2·(bikes + 1))).
type hiddenItem struct {
	hours, weight float64
}

// expectedHidden is the bin's expected hidden pairs at rates estimated
// from its own counts over the covered time (hours): the observed counts
// are lower bounds, so this is a low estimate too.
func expectedHidden(pickups, returns int, covered float64, items []hiddenItem) float64 {
	if covered <= 0 || pickups == 0 || returns == 0 {
		return 0
	}
	lp, lr := float64(pickups)/covered, float64(returns)/covered
	h := 0.0
	for _, it := range items {
		h += it.weight * expectedMin(lp*it.hours, lr*it.hours)
	}
	return h
}

// poissonTail is P(N ≥ n) for N ~ Poisson(mu).
func poissonTail(mu float64, n int) float64 {
	if n <= 0 {
		return 1
	}
	if !(mu > 0) || math.IsInf(mu, 0) {
		if mu > 0 {
			return 1
		}
		return 0
	}
	p := math.Exp(-mu) // P(N = 0)
	cdf := p
	for k := 1; k < n; k++ {
		p *= mu / float64(k)
		cdf += p
	}
	return max(0, 1-cdf)
}
