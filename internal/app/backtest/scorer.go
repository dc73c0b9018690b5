package backtest

import (
	"fmt"
	"math"
	"time"
)

// published is one origin's filtered message as numbers: mean[h][k] and
// vars[h][k] (pred_var) for h = 0..H (0 the origin's own estimate), and
// its realised demand demand[k], demandVar[k] (NaN where none); lvar[h][k]
// is the latent demand's variance (var).
type published struct {
	mean, vars, lvar  [][]float64
	demand, demandVar []float64
}

// The nowcast methods, in a Report's order; the unconstraining baselines
// follow them.
var nowcastNames = []string{ModelName, LatentName, ObservedName}

// cellScores are the scores of one set of cells: fc[horizon][method]
// [subset] (subsets All, Censored, Uncensored) and nc[nowcaster][subset]
// (Censored, Uncensored).
type cellScores struct {
	name  string
	start time.Time
	fc    [][][3]Score
	nc    [][2]Score
}

// scorer scores origin by origin, so that a backtest keeps no forecast
// it has scored: its memory is one set of scores per calendar month.
type scorer struct {
	g          *Grid
	horizons   []int
	methods    []forecaster // baselines; the model comes from published
	nowcasters []nowcaster
	byMonth    bool
	total      cellScores
	months     []*cellScores // by calendar month from g.Start's
	origins    int
}

func newScorer(g *Grid, maxH int, o ScoreOptions) (*scorer, error) {
	day, week := binsPer(24*time.Hour, g.Width), binsPer(7*24*time.Hour, g.Width)
	if day == 0 {
		return nil, fmt.Errorf("the bin width %v does not divide a day: the seasonal baselines need it to", g.Width)
	}
	for _, h := range o.Horizons {
		if h < 1 || h > maxH {
			return nil, fmt.Errorf("horizon %d is outside 1..%d (the model's horizon)", h, maxH)
		}
	}
	if o.Weeks <= 0 {
		o.Weeks = 4
	}
	if o.UnconstrainWeeks <= 0 {
		o.UnconstrainWeeks = 8
	}
	se := season{g: g, day: day, week: week}
	us := unconstrainSample{season: se, weeks: o.UnconstrainWeeks}
	s := &scorer{g: g, horizons: o.Horizons, byMonth: o.ByMonth,
		methods:    []forecaster{seasonalNaive{se}, historicalMean{se}, binOfWeekMean{se, o.Weeks}},
		nowcasters: []nowcaster{&emNowcast{unconstrainSample: us}, &pdNowcast{unconstrainSample: us}}}
	s.total = s.newCells("", time.Time{})
	return s, nil
}

func (s *scorer) newCells(name string, start time.Time) cellScores {
	c := cellScores{name: name, start: start, fc: make([][][3]Score, len(s.horizons)),
		nc: make([][2]Score, len(nowcastNames)+len(s.nowcasters))}
	for i := range c.fc {
		c.fc[i] = make([][3]Score, 1+len(s.methods))
	}
	return c
}

// month returns the scores of bin i's calendar month (nil without
// ByMonth).
func (s *scorer) month(i int) *cellScores {
	if !s.byMonth {
		return nil
	}
	t0, t := s.g.Start.UTC(), s.g.BinStart(i).UTC()
	j := (t.Year()-t0.Year())*12 + int(t.Month()) - int(t0.Month())
	for len(s.months) <= j {
		s.months = append(s.months, nil)
	}
	if s.months[j] == nil {
		start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		c := s.newCells(start.Format("2006-01"), start)
		s.months[j] = &c
	}
	return s.months[j]
}

// origin scores the forecasts and nowcasts published at origin t.
func (s *scorer) origin(t int, p *published) {
	s.origins++
	g := s.g
	np := len(g.Products)
	means, sds := make([]float64, 1+len(s.methods)), make([]float64, 1+len(s.methods))
	for hi, h := range s.horizons {
		if t+h >= g.Len() || h >= len(p.mean) {
			continue
		}
		mon := s.month(t + h)
		for k := 0; k < np; k++ {
			y := g.Truth[t+h][k]
			if math.IsNaN(y) {
				continue
			}
			means[0], sds[0] = p.mean[h][k], math.Sqrt(math.Max(p.vars[h][k], 0))
			ok := !math.IsNaN(means[0]) && !math.IsNaN(sds[0])
			for j, m := range s.methods {
				means[j+1], sds[j+1] = m.predict(t, h, k)
				ok = ok && !math.IsNaN(means[j+1]) && !math.IsNaN(sds[j+1])
			}
			if !ok {
				continue
			}
			sub := 2
			if g.Censored[t+h][k] {
				sub = 1
			}
			for j := range means {
				s.total.fc[hi][j][0].add(means[j], sds[j], y)
				s.total.fc[hi][j][sub].add(means[j], sds[j], y)
				if mon != nil {
					mon.fc[hi][j][0].add(means[j], sds[j], y)
					mon.fc[hi][j][sub].add(means[j], sds[j], y)
				}
			}
		}
	}
	s.nowcast(t, p)
}

// nowcast scores the estimates of origin t's own cells with a known
// truth: the realised demand where published, the latent mean and the
// observation; on censored cells also the unconstraining baselines.
func (s *scorer) nowcast(t int, p *published) {
	g := s.g
	mon := s.month(t)
	add := func(j, sub int, mean, sd, y float64) {
		s.total.nc[j][sub].add(mean, sd, y)
		if mon != nil {
			mon.nc[j][sub].add(mean, sd, y)
		}
	}
	for k := range g.Products {
		y := g.Truth[t][k]
		m := p.mean[0][k]
		if math.IsNaN(y) || math.IsNaN(m) || math.IsNaN(g.Y[t][k]) {
			continue
		}
		sub := 1
		if g.Censored[t][k] {
			sub = 0
		}
		if d := p.demand[k]; !math.IsNaN(d) {
			add(0, sub, d, math.Sqrt(math.Max(p.demandVar[k], 0)), y)
		}
		add(1, sub, m, math.Sqrt(math.Max(p.vars[0][k], 0)), y)
		add(2, sub, g.Y[t][k], 0, y)
		if sub != 0 {
			continue
		}
		for j, nc := range s.nowcasters {
			mean, sd := nc.nowcast(t, k)
			add(len(nowcastNames)+j, 0, mean, sd, y)
		}
	}
}

// report is the scores as a Report, its first origin from.
func (s *scorer) report(from int) *Report {
	r := &Report{Horizons: s.horizons, Origins: s.origins, EvalStart: s.g.BinStart(from),
		Methods: []string{ModelName}, Nowcasters: append([]string(nil), nowcastNames...)}
	for _, m := range s.methods {
		r.Methods = append(r.Methods, m.name())
	}
	for _, n := range s.nowcasters {
		r.Nowcasters = append(r.Nowcasters, n.name())
	}
	r.Rows = s.rows(r, &s.total)
	for _, c := range s.months {
		if c != nil {
			r.Periods = append(r.Periods, Period{Name: c.name, Start: c.start, Rows: s.rows(r, c)})
		}
	}
	return r
}

// rows lists c's scores, forecasts by horizon then the nowcasts.
func (s *scorer) rows(r *Report, c *cellScores) []Row {
	var out []Row
	subsets := [3]string{All, Censored, Uncensored}
	for hi, h := range s.horizons {
		for j, m := range r.Methods {
			for sub, name := range subsets {
				out = append(out, Row{Method: m, Subset: name, Horizon: h, Score: c.fc[hi][j][sub]})
			}
		}
	}
	for j, m := range r.Nowcasters {
		for sub, name := range subsets[1:] {
			if c.nc[j][sub].N > 0 {
				out = append(out, Row{Method: m, Subset: name, Horizon: 0, Score: c.nc[j][sub]})
			}
		}
	}
	return out
}
