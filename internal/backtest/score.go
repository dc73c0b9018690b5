package backtest

import (
	"fmt"
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

// add scores a Gaussian forecast N(mean, sd²) of a demand against y. The
// point forecast is max(mean, 0) (demand is not negative); the interval is
// the 90% one of max(f, 0), i.e. the Gaussian's clamped at 0; the CRPS is
// the Gaussian's closed form (an upper bound of the clamped variable's).
func (s *Score) add(mean, sd, y float64) {
	p := math.Max(mean, 0)
	e := p - y
	s.N++
	s.se += e * e
	s.ae += math.Abs(e)
	s.bias += e
	s.crps += crpsGaussian(mean, sd, y)
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

// Subsets of scored cells.
const (
	All      = "all"
	Censored = "censored"
)

// Row is one method's score at one horizon on one subset.
type Row struct {
	Method  string
	Subset  string
	Horizon int
	Score   Score
}

// Nowcast compares, on censored cells with a known truth, the model's
// estimates of the bin itself (h = 0) with the observed (censored) value:
// Model is the realised demand it publishes (the demand that occurred,
// stream.Estimate.Demand, with its sd), Latent its filtered latent mean
// (with the sd of pred_var). All three are scored on the same cells; a
// model that publishes no realised demand (a count likelihood) has
// Model.N = 0, and Latent and Observed are scored where the latent is.
type Nowcast struct {
	Model, Latent, Observed Score
}

// Report is a backtest's result.
type Report struct {
	Methods  []string
	Horizons []int
	Rows     []Row
	Nowcast  Nowcast
	// Origins is the number of origin bins scored; EvalStart the first.
	Origins   int
	EvalStart time.Time
}

// Find returns the row of method, subset and horizon (nil if none).
func (r *Report) Find(method, subset string, h int) *Row {
	for i := range r.Rows {
		if x := &r.Rows[i]; x.Method == method && x.Subset == subset && x.Horizon == h {
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

// model turns the runner's forecasts into a forecaster.
type model struct{ f *Forecasts }

func (model) name() string { return ModelName }

func (m model) predict(t, h, k int) (float64, float64) {
	o := t - m.f.From
	if h > m.f.H || o < 0 || o >= len(m.f.Mean[h]) {
		return math.NaN(), 0
	}
	return m.f.Mean[h][o][k], math.Sqrt(math.Max(m.f.PredVar[h][o][k], 0))
}

// ScoreOptions configure Evaluate.
type ScoreOptions struct {
	// Horizons to score (each 1..H).
	Horizons []int
	// Weeks is K of the bin-of-week mean (default 4).
	Weeks int
}

// Evaluate scores the model's forecasts f and the baselines on every
// origin from f.From on and every horizon, over the cells whose truth is
// known and for which every method has a forecast (the same cells for
// all). The grid's bins must divide a day.
func Evaluate(g *Grid, f *Forecasts, o ScoreOptions) (*Report, error) {
	day, week := binsPer(24*time.Hour, g.Width), binsPer(7*24*time.Hour, g.Width)
	if day == 0 {
		return nil, fmt.Errorf("the bin width %v does not divide a day: the seasonal baselines need it to", g.Width)
	}
	if o.Weeks <= 0 {
		o.Weeks = 4
	}
	s := season{g: g, day: day, week: week}
	methods := []forecaster{model{f}, seasonalNaive{s}, historicalMean{s}, binOfWeekMean{s, o.Weeks}}
	rep := &Report{Horizons: o.Horizons, Origins: max(0, g.Len()-f.From), EvalStart: g.BinStart(f.From)}
	for _, m := range methods {
		rep.Methods = append(rep.Methods, m.name())
	}
	for _, h := range o.Horizons {
		if h < 1 || h > f.H {
			return nil, fmt.Errorf("horizon %d is outside 1..%d (the model's horizon)", h, f.H)
		}
		scores := make([][2]Score, len(methods))
		means, sds := make([]float64, len(methods)), make([]float64, len(methods))
		for t := f.From; t+h < g.Len(); t++ {
			for k := range g.Products {
				y := g.Truth[t+h][k]
				if math.IsNaN(y) {
					continue
				}
				ok := true
				for j, m := range methods {
					means[j], sds[j] = m.predict(t, h, k)
					ok = ok && !math.IsNaN(means[j]) && !math.IsNaN(sds[j])
				}
				if !ok {
					continue
				}
				for j := range methods {
					scores[j][0].add(means[j], sds[j], y)
					if g.Censored[t+h][k] {
						scores[j][1].add(means[j], sds[j], y)
					}
				}
			}
		}
		for j, m := range methods {
			rep.Rows = append(rep.Rows, Row{Method: m.name(), Subset: All, Horizon: h, Score: scores[j][0]},
				Row{Method: m.name(), Subset: Censored, Horizon: h, Score: scores[j][1]})
		}
	}
	scoreNowcast(g, f, &rep.Nowcast)
	return rep, nil
}

// scoreNowcast scores the nowcasts of the censored cells with a known
// truth from f.From on (see Nowcast).
func scoreNowcast(g *Grid, f *Forecasts, nc *Nowcast) {
	realised := f.hasDemand()
	for t := f.From; t < g.Len(); t++ {
		for k := range g.Products {
			y := g.Truth[t][k]
			if !g.Censored[t][k] || math.IsNaN(y) {
				continue
			}
			m, sd := (model{f}).predict(t, 0, k)
			if math.IsNaN(m) {
				continue
			}
			if realised {
				d := f.Demand[t-f.From][k]
				if math.IsNaN(d) {
					continue
				}
				nc.Model.add(d, math.Sqrt(math.Max(f.DemandVar[t-f.From][k], 0)), y)
			}
			nc.Latent.add(m, sd, y)
			nc.Observed.add(g.Y[t][k], 0, y)
		}
	}
}

// hasDemand reports whether the runner published a realised demand for
// any cell.
func (f *Forecasts) hasDemand() bool {
	for _, row := range f.Demand {
		for _, d := range row {
			if !math.IsNaN(d) {
				return true
			}
		}
	}
	return false
}
