package backtest

import (
	"math"

	"github.com/dcgpd/dcgpd/inventory"
)

// correlatedFlows integrates the forecasts' uncertainty with the two
// flows' errors correlated: one standard-normal shock per flow shared by
// all its bins (ρ = 1), the returns' shock r × the pickups' plus
// √(1−r²) × its own, so that a busy day raises both flows. The rates
// max(m + σz, 0) go through the chain at n equiprobable strata of each
// shock (the shock's mean within each; n × n points, n × 1 when r = 1), and the probabilities, unmet trips and UDF are the points'
// means; s* is the mean UDF's minimiser.
type correlatedFlows struct {
	r      float64
	n      int
	lr, mr []float64
	one    inventory.Risk
}

// risk writes c's station-day risk into c.dst.
func (f *correlatedFlows) risk(c *policyCall) error {
	if len(f.lr) != decisionDay {
		f.lr, f.mr = make([]float64, decisionDay), make([]float64, decisionDay)
	}
	own := f.n
	if f.r == 1 {
		own = 1
	}
	w := 1 / float64(f.n*own)
	first := true
	for i := range f.n {
		zl := stratum(i, f.n)
		for j := range own {
			zm := f.r * zl
			if own > 1 {
				zm += math.Sqrt(1-f.r*f.r) * stratum(j, own)
			}
			for k := range decisionDay {
				f.lr[k] = math.Max(c.in.lam[k]+math.Sqrt(c.in.lamVar[k])*zl, 0)
				f.mr[k] = math.Max(c.in.mu[k]+math.Sqrt(c.in.muVar[k])*zm, 0)
			}
			if err := c.pl.RiskAtRates(&f.one, c.st, f.lr, f.mr); err != nil {
				return err
			}
			accumulateRisk(&c.dst, &f.one, w, first)
			first = false
		}
	}
	best := 0
	for s, u := range c.dst.UDF {
		if u < c.dst.UDF[best] {
			best = s
		}
	}
	c.dst.Best = best
	return nil
}

// stratum is the mean of a standard normal within the i-th of n
// equiprobable strata, n (φ(a) − φ(b)) between the quantiles a and b.
func stratum(i, n int) float64 {
	q := func(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
	phi := func(z float64) float64 {
		if math.IsInf(z, 0) {
			return 0
		}
		return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
	}
	a, b := q(float64(i)/float64(n)), q(float64(i+1)/float64(n))
	return float64(n) * (phi(a) - phi(b))
}

// accumulateRisk adds w × one's probabilities, unmet trips and UDF to
// dst (overwriting them when first).
func accumulateRisk(dst, one *inventory.Risk, w float64, first bool) {
	if first {
		dst.Capacity, dst.Bikes = one.Capacity, one.Bikes
		dst.EmptyWithin = append(dst.EmptyWithin[:0], make([]float64, len(one.EmptyWithin))...)
		dst.FullWithin = append(dst.FullWithin[:0], make([]float64, len(one.FullWithin))...)
		dst.UDF = append(dst.UDF[:0], make([]float64, len(one.UDF))...)
		dst.UnmetPickups, dst.UnmetReturns = 0, 0
	}
	for h := range one.EmptyWithin {
		dst.EmptyWithin[h] += w * one.EmptyWithin[h]
		dst.FullWithin[h] += w * one.FullWithin[h]
	}
	for s := range one.UDF {
		dst.UDF[s] += w * one.UDF[s]
	}
	dst.UnmetPickups += w * one.UnmetPickups
	dst.UnmetReturns += w * one.UnmetReturns
}
