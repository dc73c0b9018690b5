package inventory

import (
	"fmt"
	"math"
)

// Planner computes stations' inventory risk. It holds scratch memory:
// one Planner serves one goroutine at a time; with warm scratch a call
// allocates nothing.
type Planner struct {
	cfg Config
	// smoothZ, smoothW: the Gauss–Hermite rule of the shared shock when
	// ρ < 1 (see buildRule).
	smoothZ, smoothW []float64
	// lr and mr are the two flows' rules of the current call; sdBuf,
	// kinkBuf and breakBuf their scratch.
	lr, mr                   flowRule
	sdBuf, kinkBuf, breakBuf []float64
	// zero is RiskAtRates' variance: none.
	zero []float64
	// pairBuf is the grid of the current call (see pairs).
	pairBuf []pair
	ch      chain
	// The forward pass's three distributions (reflecting, 0 absorbing,
	// C absorbing), their next values and one node's sweep; the
	// backward pass's cost-to-go, its next value and one node's sweep.
	p, e, f, pn, en, fn, tmp []float64
	v, vn                    []float64
}

// NewPlanner returns a Planner for cfg, or an error naming the first
// setting out of range.
func NewPlanner(cfg Config) (*Planner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Planner{cfg: cfg}
	p.smoothZ, p.smoothW = normalRule(cfg.SharedNodes)
	p.ch.tol = cfg.Tolerance
	return p, nil
}

// Config returns the Planner's settings.
func (p *Planner) Config() Config { return p.cfg }

// Risk writes the inventory outlook of st into dst with the forecasts'
// uncertainty integrated: the expectations over the rate paths of the
// Config's correlation model, by Gauss–Hermite quadrature (see the
// package documentation). pickups and returns must cover the same bins.
func (p *Planner) Risk(dst *Risk, st Station, pickups, returns Forecast) error {
	if err := p.check(dst, st, len(pickups.Mean), len(returns.Mean)); err != nil {
		return err
	}
	if err := checkForecast("pickups", pickups); err != nil {
		return err
	}
	if err := checkForecast("returns", returns); err != nil {
		return err
	}
	return p.run(dst, st, pickups, returns)
}

// RiskAtRates writes the inventory outlook of st into dst for known
// rates: lambda[k] pickups and mu[k] returns per bin (a plug-in of point
// forecasts, or a baseline's rates). lambda and mu must have the same
// length.
func (p *Planner) RiskAtRates(dst *Risk, st Station, lambda, mu []float64) error {
	if err := p.check(dst, st, len(lambda), len(mu)); err != nil {
		return err
	}
	for k := range lambda {
		if err := p.checkRate("pickup", k, lambda[k]); err != nil {
			return err
		}
		if err := p.checkRate("return", k, mu[k]); err != nil {
			return err
		}
	}
	p.zero = grow(p.zero, len(lambda))
	clear(p.zero)
	return p.run(dst, st, Forecast{Mean: lambda, Var: p.zero}, Forecast{Mean: mu, Var: p.zero})
}

func (p *Planner) check(dst *Risk, st Station, nl, nm int) error {
	switch {
	case dst == nil:
		return fmt.Errorf("inventory: nil destination: pass a *Risk to fill")
	case st.Capacity < 0:
		return fmt.Errorf("inventory: capacity %d is negative", st.Capacity)
	case st.Capacity > p.cfg.MaxCapacity:
		return fmt.Errorf("inventory: capacity %d above the configured maximum %d", st.Capacity, p.cfg.MaxCapacity)
	case st.Bikes < 0 || st.Bikes > st.Capacity:
		return fmt.Errorf("inventory: %d bikes outside 0..%d (the capacity)", st.Bikes, st.Capacity)
	case nl != nm:
		return fmt.Errorf("inventory: %d pickup bins but %d return bins", nl, nm)
	case nl == 0:
		return fmt.Errorf("inventory: no forecast bins")
	case p.cfg.PlanningBins > nl:
		return fmt.Errorf("inventory: planning over %d bins but the forecasts hold %d", p.cfg.PlanningBins, nl)
	}
	return nil
}

func (p *Planner) checkRate(flow string, k int, r float64) error {
	if !(r >= 0 && r <= p.cfg.MaxRate) {
		return fmt.Errorf("inventory: %s rate %v in bin %d is not in [0, %v]", flow, r, k, p.cfg.MaxRate)
	}
	return nil
}

func checkForecast(flow string, f Forecast) error {
	if len(f.Var) != len(f.Mean) {
		return fmt.Errorf("inventory: %s forecast has %d means but %d variances", flow, len(f.Mean), len(f.Var))
	}
	for k, m := range f.Mean {
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return fmt.Errorf("inventory: %s forecast mean %v in bin %d is not finite", flow, m, k)
		}
		if v := f.Var[k]; !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("inventory: %s forecast variance %v in bin %d is not a finite number ≥ 0", flow, v, k)
		}
	}
	return nil
}
