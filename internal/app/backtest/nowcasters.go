package backtest

import "math"

// A nowcaster estimates the demand of a censored cell (t, k) from the
// observed series up to bin t: a Gaussian N(mean, sd²), sd 0 a point.
type nowcaster interface {
	name() string
	nowcast(t, k int) (mean, sd float64)
}

// Names of the unconstraining baselines in a Report.
const (
	EMName = "em"
	PDName = "pd"
)

// pdTau is Projection-Detruncation's τ: a censored sale b becomes the
// median of the demand given it reached b.
const pdTau = 0.5

// unconstrainSample is the sample the unconstraining baselines fit for
// cell (t, k): the product's sales in t's bin of the week over the last
// `weeks` weeks (t included), the way revenue management unconstrains one
// flight's departures of a weekday; where fewer than two of them are
// uncensored, its sales at t's bin of the day over the same weeks (7 ×
// weeks bins). Missing bins are left out.
type unconstrainSample struct {
	season
	weeks int
}

func (u unconstrainSample) sample(t, k int, x []float64, cens []bool) ([]float64, []bool) {
	for _, step := range []int{u.week, u.day} {
		x, cens = x[:0], cens[:0]
		clean := 0
		for s, j := t, 0; s >= 0 && j < u.weeks*u.week/step; s, j = s-step, j+1 {
			if y := u.g.Y[s][k]; !math.IsNaN(y) {
				x, cens = append(x, y), append(cens, u.g.Censored[s][k])
				if !u.g.Censored[s][k] {
					clean++
				}
			}
		}
		if clean >= 2 {
			break
		}
	}
	return x, cens
}

// emNowcast is Expectation-Maximisation unconstraining assuming normal
// demand per product and bin of the week (emNormal on
// unconstrainSample): the censored cell's demand is its E-step value at
// the fit, E[X | X ≥ y], with the spread of X given X ≥ y. With fewer
// than two uncensored sales even in the fallback sample it is the
// observed value (a point).
type emNowcast struct {
	unconstrainSample
	x    []float64
	cens []bool
}

func (*emNowcast) name() string { return EMName }

func (e *emNowcast) nowcast(t, k int) (float64, float64) {
	e.x, e.cens = e.sample(t, k, e.x, e.cens)
	y := e.g.Y[t][k]
	mu, sigma, ok := emNormal(e.x, e.cens)
	if !ok {
		return y, 0
	}
	return truncatedMoments(y, mu, sigma)
}

// pdNowcast is Projection-Detruncation with τ = 0.5 on the same sample
// (pdNormal): the censored cell's demand is its detruncated value at the
// fixed point, a point forecast.
type pdNowcast struct {
	unconstrainSample
	x    []float64
	cens []bool
}

func (*pdNowcast) name() string { return PDName }

func (p *pdNowcast) nowcast(t, k int) (float64, float64) {
	p.x, p.cens = p.sample(t, k, p.x, p.cens)
	y := p.g.Y[t][k]
	mu, sigma := pdNormal(p.x, p.cens, pdTau)
	return detruncate(y, mu, sigma, pdTau), 0
}
