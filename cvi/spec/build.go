package spec

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/diffusion"
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/filter/kernel"
)

// Summary describes the data a model is built for; Build starts
// hyperparameters the configuration leaves open from it.
type Summary struct {
	// Variance of the observed demand (pooled over products).
	Variance float64
	// LogMoment is the mean of log(y + ½)² over the observed demand: the
	// scale of a log-rate GP with a zero mean (count likelihoods), whose
	// kernel variance starts there. 0 means "use 1".
	LogMoment float64
	// MedianStep is the median spacing of the bin times.
	MedianStep float64
	// Features are the products' feature rows (nil if none), Geographic
	// when they are (lat, lon) in degrees.
	Features   [][]float64
	Geographic bool
	NP         int
	// Names are the products' names (for explicit transition files).
	Names []string
	// Capacity is each product's capacity (docks, say; nil if not known,
	// 0 for one not known): the level of a product without a row of
	// model.mean.values scales with it (Mean.PooledProfile).
	Capacity []float64
}

// Summarise computes a Summary of data.
func Summarise(d *cvi.Data, features [][]float64, geographic bool) Summary {
	s := Summary{Features: features, Geographic: geographic, NP: d.NP}
	var n, mean, m2, lm float64
	for _, o := range d.Obs {
		if math.IsNaN(o.Y) {
			continue
		}
		if l := math.Log(math.Max(o.Y, 0) + 0.5); !math.IsInf(l, 0) && !math.IsNaN(l) {
			lm += l * l
		}
		n++
		delta := o.Y - mean
		mean += delta / n
		m2 += delta * (o.Y - mean)
	}
	if n > 1 {
		s.Variance = m2 / (n - 1)
	}
	if n > 0 {
		s.LogMoment = lm / n
	}
	if !(s.Variance > 0) {
		s.Variance = 1
	}
	if len(d.Times) > 1 {
		steps := make([]float64, len(d.Times)-1)
		for i := range steps {
			steps[i] = d.Times[i+1] - d.Times[i]
		}
		sort.Float64s(steps)
		s.MedianStep = steps[len(steps)/2]
	}
	if !(s.MedianStep > 0) {
		s.MedianStep = 1
	}
	return s
}

// Built is a model ready for inference.
type Built struct {
	Model *filter.Model
	Lik   cvi.Likelihood
	// Fixed names the parameters learning must hold.
	Fixed map[string]bool
	// Learn reports whether hyperparameters are learned at all.
	Learn bool
	// Options are the learning options from [fit].
	Options cvi.LearnOptions
	// Likelihood names the likelihood (the configured or default one).
	Likelihood string
	// Mean is the prior mean m(t, k) (nil: zero): the likelihood sees the
	// data shifted by Mean.Shift, and every output gets m back.
	Mean *Profile
	// meanBase is the fitted profile Mean scales once SetMeanScale ran
	// (nil before: Mean is as fitted); meanScale the levels in use.
	meanBase  *Profile
	meanScale []float64
	// Levels is the configured level source (model.levels), with the
	// values Learn computed; At gives a cell's level.
	Levels Levels
	// Pooling reports which products got the pooled prior mean (no row
	// of model.mean.values) and how; zero without values.
	Pooling Pooling
}

// Build turns the configuration into a model and likelihood for data
// summarised by sum. likelihood, if not empty, overrides model.likelihood.
func (s Spec) Build(sum Summary, likelihood string) (*Built, error) {
	m := s.Model
	if likelihood != "" {
		if !likelihoods[likelihood] {
			return nil, fmt.Errorf("likelihood %q: want gaussian, tobit, diffusion, poisson or censored-poisson", likelihood)
		}
		m.Likelihood = likelihood
	}
	if m.Likelihood == "" {
		// Diffusion needs a graph: product features or an explicit matrix.
		m.Likelihood = "tobit"
		if sum.NP >= 2 && (len(sum.Features) == sum.NP || m.Diffusion.Transition != "") {
			m.Likelihood = "diffusion"
		}
	}
	if m.Mean.On() {
		if err := checkMeanLikelihood(m.Likelihood, m.Diffusion.Mode); err != nil {
			return nil, err
		}
	}
	fixed := map[string]bool{}
	b := &Built{Fixed: fixed, Learn: s.Fit.Learn == nil || *s.Fit.Learn, Likelihood: m.Likelihood, Levels: m.Levels}
	kernels, err := buildKernels(m, sum, fixed)
	if err != nil {
		return nil, err
	}
	prod, err := buildProduct(m.Product, sum, fixed)
	if err != nil {
		return nil, err
	}
	if m.PerProduct {
		b.Model, err = filter.NewIndependentModel(kernels)
	} else {
		b.Model, err = filter.NewModel(kernels[0], prod, sum.Features, sum.NP)
	}
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, n := range b.Model.ParamNames() {
		known[n] = true
	}
	for n := range fixed {
		if !known[n] {
			return nil, fmt.Errorf("internal: fixed parameter %q is not a model parameter", n)
		}
	}
	if b.Lik, err = buildLikelihood(m, sum, fixed); err != nil {
		return nil, err
	}
	if m.Mean.On() && len(m.Mean.Values) > 0 {
		if b.Mean, b.Pooling, err = m.Mean.PooledProfile(sum); err != nil {
			return nil, err
		}
	}
	b.Options = cvi.LearnOptions{MaxIterations: s.Fit.MaxIterations, Tol: s.Fit.Tolerance, GradTol: s.Fit.GradientTolerance, Beta: s.Fit.Damping, Fixed: fixed,
		Fallback: s.Fit.Fallback}
	return b, nil
}

// buildKernels builds the temporal kernel (one per product with
// model.per_product): the sum of the configured components, Matérn-3/2 by
// default. It adds the names of the parameters to pin to fixed.
func buildKernels(m Model, sum Summary, fixed map[string]bool) ([]kernel.Temporal, error) {
	comps := m.Temporal
	if len(comps) == 0 {
		comps = []Temporal{{Kernel: "matern32"}}
	}
	copies := 1
	if m.PerProduct {
		copies = sum.NP
	}
	kernels := make([]kernel.Temporal, copies)
	for c := 0; c < copies; c++ {
		var parts []kernel.Temporal
		for i, t := range comps {
			k, names, err := buildTemporal(t, sum, len(comps), m.Likelihood)
			if err != nil {
				return nil, fmt.Errorf("model.temporal[%d]: %w", i, err)
			}
			parts = append(parts, k)
			prefix := "temporal."
			if copies > 1 {
				prefix += fmt.Sprintf("%d.", c)
			}
			if len(comps) > 1 {
				prefix += fmt.Sprintf("%d.", i)
			}
			for _, n := range names {
				fixed[prefix+n] = true
			}
		}
		if len(parts) == 1 {
			kernels[c] = parts[0]
			continue
		}
		sumK, err := kernel.NewSum(parts...)
		if err != nil {
			return nil, err
		}
		kernels[c] = sumK
	}
	return kernels, nil
}

// buildTemporal builds one temporal component and returns the names of
// its parameters to pin.
func buildTemporal(t Temporal, sum Summary, ncomp int, likelihood string) (kernel.Temporal, []string, error) {
	v := t.Variance
	if v == 0 {
		scale := sum.Variance
		if likelihood == "poisson" || likelihood == "censored-poisson" {
			// The GP is the log-rate: start at the scale of log counts,
			// not of the counts (exp of a variance-100 GP overflows).
			scale = sum.LogMoment
			if !(scale > 0) {
				scale = 1
			}
		}
		v = scale / float64(ncomp)
	}
	l := t.Lengthscale
	if l == 0 {
		l = 10 * sum.MedianStep
	}
	var k kernel.Temporal
	var err error
	switch t.Kernel {
	case "matern12":
		k, err = kernel.NewMatern12(v, l)
	case "matern32":
		k, err = kernel.NewMatern32(v, l)
	case "matern52":
		k, err = kernel.NewMatern52(v, l)
	case "periodic", "quasiperiodic":
		h := t.Harmonics
		if h == 0 {
			h = DefaultHarmonics
		}
		if t.Lengthscale == 0 {
			l = 1
		}
		if t.Kernel == "periodic" {
			k, err = kernel.NewPeriodic(v, l, t.Period, h)
		} else {
			ml := t.MaternLengthscale
			if ml == 0 {
				ml = 5 * t.Period
			}
			order := t.MaternOrder
			if order == 0 {
				order = 12
			}
			k, err = kernel.NewQuasiPeriodic(v, l, t.Period, ml, h, order)
		}
	default:
		return nil, nil, fmt.Errorf("unknown kernel %q", t.Kernel)
	}
	if err != nil {
		return nil, nil, err
	}
	var pin []string
	names := k.ParamNames()
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	if t.Fixed {
		pin = names
	} else {
		for _, n := range t.FixedParams {
			if !known[n] {
				return nil, nil, fmt.Errorf("fixed_params: %q is not a parameter of %s (have %v)", n, t.Kernel, names)
			}
			pin = append(pin, n)
		}
	}
	return k, pin, nil
}

// buildProduct builds the product kernel (nil for independent products).
func buildProduct(p Product, sum Summary, fixed map[string]bool) (kernel.Spatial, error) {
	if p.Kernel == "" || p.Kernel == "independent" {
		return nil, nil
	}
	if len(sum.Features) != sum.NP || sum.NP == 0 {
		return nil, fmt.Errorf("model.product.kernel %q needs product features", p.Kernel)
	}
	dim := len(sum.Features[0])
	metric := kernel.Euclidean
	if sum.Geographic {
		metric = kernel.GreatCircle
		if p.Kernel != "rbf" {
			// Matérn kernels of great-circle distance need not be positive
			// definite on the sphere; the chordal distance keeps them so.
			metric = kernel.Chordal
		}
	}
	ls := p.Lengthscales
	if len(ls) == 0 {
		l := p.Lengthscale
		if l == 0 {
			l = medianNeighbourDistance(sum.Features, sum.Geographic)
		}
		n := dim
		if sum.Geographic {
			n = 1
		}
		ls = make([]float64, n)
		for i := range ls {
			ls[i] = l
		}
	}
	v := p.Variance
	if v == 0 {
		v = 1
	}
	var k kernel.Spatial
	var err error
	switch p.Kernel {
	case "matern12", "matern32", "matern52":
		order := map[string]int{"matern12": 12, "matern32": 32, "matern52": 52}[p.Kernel]
		k, err = kernel.NewMaternSpatial(order, metric, v, ls...)
	case "rbf":
		k, err = kernel.NewRBF(metric, v, ls...)
	case "separable-matern32":
		if sum.Geographic {
			return nil, errors.New("separable-matern32 needs Euclidean features, not lat/lon")
		}
		if len(ls) != dim {
			return nil, fmt.Errorf("separable-matern32: %d lengthscales for %d features", len(ls), dim)
		}
		parts := make([]kernel.Spatial, dim)
		for i := range parts {
			pv := 1.0
			if i == 0 {
				pv = v
			}
			if parts[i], err = kernel.NewMaternSpatial(32, kernel.Euclidean, pv, ls[i]); err != nil {
				return nil, err
			}
		}
		k, err = kernel.NewSeparable(parts...)
	}
	if err != nil {
		return nil, fmt.Errorf("model.product: %w", err)
	}
	for _, n := range k.ParamNames() {
		isVar := n == "variance" || len(n) > 8 && n[len(n)-8:] == "variance"
		if (isVar && !p.LearnVariance) || (!isVar && p.Fixed) {
			fixed["product."+n] = true
		}
	}
	return k, nil
}

// medianNeighbourDistance is the median over products of the distance to
// the nearest other product (great-circle metres for geographic features;
// 1 if undefined), found by the diffusion graph's k-d tree.
func medianNeighbourDistance(f [][]float64, geographic bool) float64 {
	metric := diffusion.Euclidean
	if geographic {
		metric = diffusion.GreatCircle
	}
	g, err := diffusion.NewGraph(f, diffusion.GraphOptions{Metric: metric, K: 1})
	if err != nil {
		return 1
	}
	var ds []float64
	for i := 0; i < g.N(); i++ {
		_, d2 := g.Neighbours(i)
		if len(d2) == 0 {
			continue
		}
		best := slices.Min(d2)
		if best > 0 && !math.IsInf(best, 1) {
			ds = append(ds, math.Sqrt(best))
		}
	}
	if len(ds) == 0 {
		return 1
	}
	sort.Float64s(ds)
	return ds[len(ds)/2]
}
