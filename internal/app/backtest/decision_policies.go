package backtest

import "github.com/dcgpd/dcgpd/inventory"

// decisionPolicy is one way to set a station's stock at the day's start:
// the risk it computes (its Best is the level set, its EmptyWithin and
// FullWithin are scored).
type decisionPolicy struct {
	name string
	risk func(c *policyCall) error
}

// policyCall is one station-day as the policies see it.
type policyCall struct {
	// pl integrates the forecasts' uncertainty with the configured
	// correlation, pi with independent bins.
	pl, pi *inventory.Planner
	dst    inventory.Risk
	st     inventory.Station
	in     *stationInput
	hist   *History
	// k is the station, di the day's first bin in the data.
	k, di int
}

func (c *policyCall) forecasts() (inventory.Forecast, inventory.Forecast) {
	return inventory.Forecast{Mean: c.in.lam, Var: c.in.lamVar}, inventory.Forecast{Mean: c.in.mu, Var: c.in.muVar}
}

// defaultPolicies are dcgpd (uncertainty integrated, the default), its
// mean plugged in, dcgpd with independent bin errors, the historical
// mean and the bin-of-week mean, and dcgpd with its two flows' errors
// correlated r = 0.5 and r = 1 across flows (correlatedFlows). Each call
// returns new policies (some hold scratch memory).
func defaultPolicies() []decisionPolicy {
	return []decisionPolicy{
		{"dcgpd", func(c *policyCall) error {
			l, m := c.forecasts()
			return c.pl.Risk(&c.dst, c.st, l, m)
		}},
		{"dcgpd-plugin", func(c *policyCall) error { return c.pl.RiskAtRates(&c.dst, c.st, c.in.plugL, c.in.plugM) }},
		{"dcgpd-independent", func(c *policyCall) error {
			l, m := c.forecasts()
			return c.pi.Risk(&c.dst, c.st, l, m)
		}},
		{"hm-c1p1t3", func(c *policyCall) error { return c.pl.RiskAtRates(&c.dst, c.st, c.in.hmL, c.in.hmM) }},
		{"bow-mean", func(c *policyCall) error { return c.pl.RiskAtRates(&c.dst, c.st, c.in.bowL, c.in.bowM) }},
		{"dcgpd-flows-r0.5", (&correlatedFlows{r: 0.5, n: 12}).risk},
		{"dcgpd-flows-r1", (&correlatedFlows{r: 1, n: 24}).risk},
	}
}

// policyList is o's policies (the default ones unless an experiment set
// its own).
func (o DecisionOptions) policyList() []decisionPolicy {
	if o.policies != nil {
		return o.policies
	}
	return defaultPolicies()
}
