package backtest

import (
	"math"
	"time"
)

// z95 is the standard normal 95% quantile: a 90% interval is mean ∓ z95·sd.
const z95 = 1.6448536269514722

// Score accumulates one method's errors over a set of cells.
type Score struct {
	N                           int
	se, ae, crps, bias, covered float64
	withSpread                  int
}

// RMSE, MAE, CRPS and Bias (forecast − truth) are means over the cells;
// Coverage is the share of cells whose truth lies in the 90% interval,
// NaN for a point forecast.
func (s *Score) RMSE() float64 { return math.Sqrt(s.se / float64(s.N)) }

// MAE is the mean absolute error.
func (s *Score) MAE() float64 { return s.ae / float64(s.N) }

// CRPS is the mean continuous ranked probability score.
func (s *Score) CRPS() float64 { return s.crps / float64(s.N) }

// Bias is the mean of forecast − truth.
func (s *Score) Bias() float64 { return s.bias / float64(s.N) }

// Coverage is the 90% interval's empirical coverage.
func (s *Score) Coverage() float64 {
	if s.withSpread == 0 {
		return math.NaN()
	}
	return s.covered / float64(s.withSpread)
}

// add scores a Gaussian forecast N(mean, sd²) of a demand against y as the
// forecast of max(f, 0), f ~ N(mean, sd²) (demand is not negative): the
// point forecast is max(mean, 0), the interval the 90% one of max(f, 0)
// (the Gaussian's clamped at 0) and the CRPS that of max(f, 0), whose
// distribution puts the Gaussian's mass below 0 at 0.
func (s *Score) add(mean, sd, y float64) {
	p := math.Max(mean, 0)
	e := p - y
	s.N++
	s.se += e * e
	s.ae += math.Abs(e)
	s.bias += e
	s.crps += crpsClampedGaussian(mean, sd, y)
	if sd > 0 {
		s.withSpread++
		lo, hi := math.Max(mean-z95*sd, 0), math.Max(mean+z95*sd, 0)
		if y >= lo && y <= hi {
			s.covered++
		}
	}
}

// crpsGaussian is the CRPS of N(m, s²) at y (Gneiting & Raftery 2007):
// s·[z(2Φ(z)−1) + 2φ(z) − 1/√π], z = (y−m)/s; |y−m| when s = 0.
func crpsGaussian(m, s, y float64) float64 {
	if !(s > 0) {
		return math.Abs(y - m)
	}
	z := (y - m) / s
	pdf := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
	cdf := 0.5 * math.Erfc(-z/math.Sqrt2)
	return s * (z*(2*cdf-1) + 2*pdf - 1/math.Sqrt(math.Pi))
}

// crpsClampedGaussian is the CRPS at y of max(f, 0), f ~ N(m, s²): the
// Gaussian's CRPS less the part of it below 0, where the clamped
// variable's distribution function is 0 instead of Φ. With l = −m/s and
// G(a) = ∫_{−∞}^a Φ(u)² du = aΦ(a)² + 2Φ(a)φ(a) − Φ(a√2)/√π, it is
// crpsGaussian(m, s, y) − s·G(l) for y ≥ 0 and −y + s·G(−l) for y < 0;
// |y − max(m, 0)| when s = 0.
func crpsClampedGaussian(m, s, y float64) float64 {
	if !(s > 0) {
		return math.Abs(y - math.Max(m, 0))
	}
	l := -m / s
	if y < 0 {
		return -y + s*squaredPhiIntegral(-l)
	}
	return math.Max(crpsGaussian(m, s, y)-s*squaredPhiIntegral(l), 0)
}

// squaredPhiIntegral is ∫_{−∞}^a Φ(u)² du = aΦ(a)² + 2Φ(a)φ(a) −
// Φ(a√2)/√π (its derivative is Φ(a)², and it vanishes at −∞); 0 below
// a = −38, where every term underflows.
func squaredPhiIntegral(a float64) float64 {
	if a < -38 {
		return 0
	}
	cdf := 0.5 * math.Erfc(-a/math.Sqrt2)
	pdf := math.Exp(-a*a/2) / math.Sqrt(2*math.Pi)
	return a*cdf*cdf + 2*cdf*pdf - 0.5*math.Erfc(-a)/math.Sqrt(math.Pi)
}

// Subsets of scored cells: every cell, and the cells whose observation
// was censored (a stock-out) or not.
const (
	All        = "all"
	Censored   = "censored"
	Uncensored = "uncensored"
)

// Row is one method's score at one horizon on one subset. Horizon 0 is
// the nowcast: the estimate of the origin bin itself.
type Row struct {
	Method  string
	Subset  string
	Horizon int
	Score   Score
}

// Period is the scores of the cells whose bin (the forecast's target, the
// nowcast's own bin) lies in one calendar month (UTC).
type Period struct {
	// Name is the month, "2006-01"; Start its first instant.
	Name  string
	Start time.Time
	Rows  []Row
}

// Find returns the row of method, subset and horizon (nil if none).
func (p *Period) Find(method, subset string, h int) *Row { return findRow(p.Rows, method, subset, h) }

// Report is a backtest's result. Rows hold the forecasts' scores at each
// horizon (methods: ModelName, then the baselines), subsets All,
// Censored and Uncensored, on the same cells for every method; and the
// nowcasts' (horizon 0: ModelName is the realised demand the model
// publishes, LatentName its latent mean, "observed" the observation, EMName
// and PDName the unconstraining baselines) on censored cells, the first
// three also on uncensored cells. Periods split them by calendar month
// when asked (ScoreOptions.ByMonth).
type Report struct {
	Methods    []string
	Nowcasters []string
	Horizons   []int
	Rows       []Row
	Periods    []Period
	// Origins is the number of origin bins scored; EvalStart the first.
	Origins   int
	EvalStart time.Time
}

// Find returns the row of method, subset and horizon (nil if none).
func (r *Report) Find(method, subset string, h int) *Row { return findRow(r.Rows, method, subset, h) }

func findRow(rows []Row, method, subset string, h int) *Row {
	for i := range rows {
		if x := &rows[i]; x.Method == method && x.Subset == subset && x.Horizon == h {
			return x
		}
	}
	return nil
}

// ModelName is the method name of the model's forecasts in a Report.
const ModelName = "dcgpd"

// LatentName is the method name of the nowcast by the latent mean (the
// nowcast's ModelName row is the realised demand).
const LatentName = "dcgpd-latent"

// ObservedName is the method name of the nowcast by the observation.
const ObservedName = "observed"

// ScoreOptions configure Evaluate.
type ScoreOptions struct {
	// Horizons to score (each 1..H).
	Horizons []int
	// Weeks is K of the bin-of-week mean (default 4).
	Weeks int
	// UnconstrainWeeks is how many weeks of a product's sales the
	// unconstraining baselines fit (default 8; unconstrainSample).
	UnconstrainWeeks int
	// ByMonth adds the scores per calendar month (Report.Periods).
	ByMonth bool
}

// Evaluate scores the model's forecasts f and the baselines on every
// origin from f.From on and every horizon, over the cells whose truth is
// known and for which every method has a forecast (the same cells for
// all). The grid's bins must divide a day.
func Evaluate(g *Grid, f *Forecasts, o ScoreOptions) (*Report, error) {
	s, err := newScorer(g, f.H, o)
	if err != nil {
		return nil, err
	}
	p := published{mean: make([][]float64, f.H+1), vars: make([][]float64, f.H+1)}
	for t := f.From; t < g.Len(); t++ {
		o := t - f.From
		for h := range p.mean {
			p.mean[h], p.vars[h] = f.Mean[h][o], f.PredVar[h][o]
		}
		p.demand, p.demandVar = f.Demand[o], f.DemandVar[o]
		s.origin(t, &p)
	}
	return s.report(f.From), nil
}
