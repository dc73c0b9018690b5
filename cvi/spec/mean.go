package spec

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dcgpd/dcgpd/cvi"
)

// Mean configures an explicit prior mean of the latent demand, the
// [model.mean] table: f(t, k) = m(t, k) + g(t, k), g the configured GP.
// The only kind is "periodic": one value per cell of the period (cells
// of width Step) and product.
type Mean struct {
	// Kind is "" (no prior mean, the default) or "periodic".
	Kind string `toml:"kind"`
	// Period in model time units (hours), as the periods of the temporal
	// components; default DefaultMeanPeriod (one week).
	Period float64 `toml:"period"`
	// Step is the width of one cell in hours (default: the data's bin
	// width); Period must be a whole number of steps.
	Step float64 `toml:"step"`
	// Estimate (default true) estimates the values when the model is
	// learned ([fit] learn); false keeps Values as given.
	Estimate *bool `toml:"estimate"`
	// FirstPass is the likelihood of the estimate's first pass when the
	// model's is the diffusion: "" or "tobit" (the default: the cheap,
	// censoring-aware model, which takes a neighbour's inflow as its own
	// demand) or "model" (the diffusion itself).
	FirstPass string `toml:"first_pass"`
	// Level is how the daemon's prior mean follows the data between fits:
	// "" or "fixed" (the default: m as fitted) or "scale" (m(t, k) =
	// s_k·m_fit(t, k), the level s_k of product k re-estimated at every
	// re-smooth from the window's smoothed demand; see EstimateScale).
	Level string `toml:"level"`
	// SignalPower p (default 0: off) makes the GP's variances follow the
	// level too, with level = "scale": f = m + a·g, a = s̄^p, s̄ the
	// geometric mean of the products' levels s_k, so the kernels'
	// variances are s̄^(2p) times the fitted ones (SignalFactor) and the
	// signal keeps its share of the level-dependent noise. In [0,
	// MaxSignalPower].
	SignalPower float64 `toml:"signal_power"`
	// Values holds Period/Step values per product, by product name:
	// cell c covers the model times t with floor(t/Step) mod cells = c,
	// t in hours since the Unix epoch (UTC), so a cell is the same bin of
	// the week wherever the data start.
	Values map[string][]float64 `toml:"values"`
}

// DefaultMeanPeriod is the prior mean's default period: a week of hours.
const DefaultMeanPeriod = 168

// maxMeanCells bounds a profile's cells per product (a year of hours).
const maxMeanCells = 8784

// ErrMeanLikelihood is returned for a prior mean with a likelihood that is
// not shift-equivariant (the count likelihoods, the supply-aware
// diffusion graph): subtracting m from the data would change the model.
var ErrMeanLikelihood = errors.New("model.mean needs a shift-equivariant likelihood")

// On reports whether a prior mean is configured.
func (m Mean) On() bool { return m.Kind != "" }

// EstimateOn reports whether learning estimates the values.
func (m Mean) EstimateOn() bool { return m.Estimate == nil || *m.Estimate }

// period returns the configured period or the default.
func (m Mean) period() float64 {
	if m.Period > 0 {
		return m.Period
	}
	return DefaultMeanPeriod
}

// cells returns the number of cells of the period for step.
func cellsOf(period, step float64) (int, error) {
	if !(step > 0) {
		return 0, fmt.Errorf("model.mean.step must be > 0, got %v", step)
	}
	n := math.Round(period / step)
	if n < 1 || math.Abs(n*step-period) > 1e-9*period {
		return 0, fmt.Errorf("model.mean: period %v is not a whole number of steps of %v", period, step)
	}
	if n > maxMeanCells {
		return 0, fmt.Errorf("model.mean: period %v / step %v = %v cells, at most %d", period, step, n, maxMeanCells)
	}
	return int(n), nil
}

// validate checks the table without data (likelihood: the configured one,
// "" for the default; mode: model.diffusion.mode).
func (m Mean) validate(likelihood, mode string) error {
	if !m.On() {
		if m.Period != 0 || m.Step != 0 || m.Estimate != nil || m.FirstPass != "" || m.Level != "" || m.SignalPower != 0 || len(m.Values) > 0 {
			return errors.New("model.mean: kind is missing (want \"periodic\")")
		}
		return nil
	}
	if m.Kind != "periodic" {
		return fmt.Errorf("model.mean.kind %q: want periodic", m.Kind)
	}
	if m.FirstPass != "" && m.FirstPass != "tobit" && m.FirstPass != "model" {
		return fmt.Errorf("model.mean.first_pass %q: want tobit or model", m.FirstPass)
	}
	if m.Level != "" && m.Level != LevelFixed && m.Level != LevelScale {
		return fmt.Errorf("model.mean.level %q: want fixed or scale", m.Level)
	}
	if err := m.validateSignal(); err != nil {
		return err
	}
	if err := checkMeanLikelihood(likelihood, mode); err != nil {
		return err
	}
	if err := finite("model.mean: period and step", m.Period, m.Step); err != nil {
		return err
	}
	if m.Period < 0 || m.Step < 0 {
		return errors.New("model.mean: period and step must be > 0")
	}
	if m.Step > 0 {
		if _, err := cellsOf(m.period(), m.Step); err != nil {
			return err
		}
	}
	if !m.EstimateOn() && len(m.Values) == 0 {
		return errors.New("model.mean: estimate = false needs values")
	}
	if len(m.Values) > 0 {
		if m.Step == 0 {
			return errors.New("model.mean: values need a step")
		}
		n, _ := cellsOf(m.period(), m.Step)
		for _, name := range sortedKeys(m.Values) {
			vs := m.Values[name]
			if len(vs) != n {
				return valuesError(name, fmt.Errorf("model.mean.values[%q] has %d values, want period/step = %d", name, len(vs), n))
			}
			if err := finite(fmt.Sprintf("model.mean.values[%q]", name), vs...); err != nil {
				return valuesError(name, err)
			}
		}
	}
	return nil
}

// checkMeanLikelihood refuses a prior mean with a likelihood that does not
// see f only through f − u and y − f: the count likelihoods (a log-rate),
// and the supply-aware diffusion graph, whose availability of a product
// with a missing observation is u > 0, not a function of f − u.
func checkMeanLikelihood(likelihood, mode string) error {
	switch likelihood {
	case "poisson", "censored-poisson":
		return fmt.Errorf("%w: the %s likelihood is not (its latent is a log-rate)", ErrMeanLikelihood, likelihood)
	}
	if mode == "available" && (likelihood == "" || likelihood == "diffusion") {
		return fmt.Errorf("%w: model.diffusion.mode \"available\" tests u > 0 where a product is unobserved", ErrMeanLikelihood)
	}
	return nil
}

func sortedKeys(m map[string][]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Profile is a periodic prior mean ready for use: M[k][c] is product k's
// value in cell c. A nil *Profile is the zero mean: its methods do nothing.
type Profile struct {
	Step  float64
	Cells int
	M     [][]float64
}

// NewProfile returns the profile of m's values for the products names (in
// that order). Every product needs a row, and every row a product (see
// PooledProfile for products without one).
func (m Mean) NewProfile(names []string) (*Profile, error) {
	n, err := cellsOf(m.period(), m.Step)
	if err != nil {
		return nil, err
	}
	p := &Profile{Step: m.Step, Cells: n, M: make([][]float64, len(names))}
	for k, name := range names {
		vs, ok := m.Values[name]
		if !ok {
			return nil, valuesError("", fmt.Errorf("model.mean.values has no row for product %q", name))
		}
		if len(vs) != n {
			return nil, valuesError(name, fmt.Errorf("model.mean.values[%q] has %d values, want %d", name, len(vs), n))
		}
		p.M[k] = append([]float64(nil), vs...)
	}
	if len(m.Values) != len(names) {
		return nil, valuesError("", fmt.Errorf("model.mean.values has %d rows for %d products", len(m.Values), len(names)))
	}
	return p, nil
}

// Cell returns the cell of model time t (hours since the Unix epoch):
// floor(t/Step) mod Cells, from absolute time, so fit, learning, the
// daemon and its forecasts agree. The nudge absorbs rounding of t/Step
// for steps that are not binary fractions of an hour.
func (p *Profile) Cell(t float64) int { return periodCell(t, p.Step, p.Cells) }

// periodCell is floor(t/step) mod cells, the cell of time t in a periodic
// table of cells steps (the prior mean's and model.levels'): a time on a
// cell's start may be a rounding below it, so t/step is nudged up.
func periodCell(t, step float64, cells int) int {
	i := math.Floor(t/step + 1e-6)
	c := int(math.Mod(i, float64(cells)))
	if c < 0 {
		c += cells
	}
	return c
}

// At returns m(t, k) (0 for a nil profile).
func (p *Profile) At(t float64, k int) float64 {
	if p == nil {
		return 0
	}
	return p.M[k][p.Cell(t)]
}

// Shift subtracts m(t, ·) from one bin's observations in place (see
// shiftObs).
func (p *Profile) Shift(t float64, obs []cvi.Obs) {
	if p == nil {
		return
	}
	c := p.Cell(t)
	for k := range obs {
		shiftObs(&obs[k], p.M[k][c])
	}
}

// shiftObs is the one place an observation meets the prior mean m of its
// cell: the likelihood then sees y − m and u − m (NaN Y stays NaN, +Inf
// supply stays +Inf).
func shiftObs(o *cvi.Obs, m float64) {
	o.Level = m // the level of level-dependent noise (Boundary)
	o.Y -= m
	o.Supply -= m
}

// Add adds m(t, ·) to one bin's latent means in place (the outputs).
func (p *Profile) Add(t float64, mean []float64) {
	if p == nil {
		return
	}
	c := p.Cell(t)
	for k := range mean {
		mean[k] += p.M[k][c]
	}
}

// AddAll adds m to every bin of a posterior mean over times (index
// n·NP + k).
func (p *Profile) AddAll(times []float64, np int, mean []float64) {
	if p == nil {
		return
	}
	for n, t := range times {
		p.Add(t, mean[n*np:(n+1)*np])
	}
}

// Values returns the profile as model.mean values by product name.
func (p *Profile) Values(names []string) map[string][]float64 {
	out := make(map[string][]float64, len(names))
	for k, name := range names {
		out[name] = append([]float64(nil), p.M[k]...)
	}
	return out
}

// EstimateProfile averages a posterior mean of f over times (index n·NP +
// k) per cell of the period and product, over the bins where the product
// is observed (obs[n·NP+k].Y not NaN). A cell with no observed bin takes
// the average over its bins, observed or not; one the span does not reach
// takes the product's average over the observed bins.
func EstimateProfile(period, step float64, times []float64, obs []cvi.Obs, mean []float64, np int) (*Profile, error) {
	n, err := cellsOf(period, step)
	if err != nil {
		return nil, err
	}
	p := &Profile{Step: step, Cells: n, M: make([][]float64, np)}
	for k := range np {
		sumObs, cntObs := make([]float64, n), make([]float64, n)
		sumAll, cntAll := make([]float64, n), make([]float64, n)
		var tot, cnt float64
		for i, t := range times {
			c, v := p.Cell(t), mean[i*np+k]
			sumAll[c] += v
			cntAll[c]++
			if !math.IsNaN(obs[i*np+k].Y) {
				sumObs[c] += v
				cntObs[c]++
				tot += v
				cnt++
			}
		}
		if cnt == 0 {
			return nil, fmt.Errorf("model.mean: product %d has no observation in the training span", k)
		}
		row := make([]float64, n)
		for c := range row {
			switch {
			case cntObs[c] > 0:
				row[c] = sumObs[c] / cntObs[c]
			case cntAll[c] > 0:
				row[c] = sumAll[c] / cntAll[c]
			default:
				row[c] = tot / cnt
			}
		}
		p.M[k] = row
	}
	return p, nil
}

// fitted sets the table to the profile p (built for the products names),
// with estimate = false, for a saved model; nothing when p is nil.
func (m *Mean) fitted(p *Profile, names []string) error {
	if p == nil {
		return nil
	}
	t, err := p.Table(names)
	if err != nil {
		return fmt.Errorf("%w %w", err, ErrNotSavable)
	}
	t.Level, t.SignalPower = m.Level, m.SignalPower
	*m = t
	return nil
}

// Table returns p as a [model.mean] table for the products names (p's
// rows, in order) with estimate = false: the model file's values.
func (p *Profile) Table(names []string) (Mean, error) {
	if len(names) != len(p.M) {
		return Mean{}, fmt.Errorf("model.mean: %d product names for %d profile rows", len(names), len(p.M))
	}
	no := false
	return Mean{Kind: "periodic", Period: float64(p.Cells) * p.Step, Step: p.Step, Estimate: &no, Values: p.Values(names)}, nil
}
