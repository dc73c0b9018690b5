package spec

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrNotSavable is returned by Fitted for a model the configuration format
// cannot hold (per-product temporal hyperparameters, separable product
// variances other than the first).
var ErrNotSavable = errors.New("cannot be written as a model configuration")

// maxNudge bounds the ulps Fitted moves a value so that softplus⁻¹ of it
// gives back the fitted unconstrained parameter exactly.
const maxNudge = 8

// Fitted returns the configuration s with every hyperparameter set to its
// fitted value in b (built from s for data summarised by sum) and
// [fit] learn = false, so that Build(sum, "") of the result has bit for bit
// the same Model.Params and Lik.Params as b, whatever data it is built
// for (no value is left to default from the data). Pinned parameters stay
// pinned.
func (s Spec) Fitted(b *Built, sum Summary) (Spec, error) {
	out := s.clone()
	m := &out.Model
	if m.PerProduct {
		return Spec{}, fmt.Errorf("model.per_product: one set of temporal hyperparameters per product %w", ErrNotSavable)
	}
	m.Likelihood = b.Likelihood
	m.Levels = b.Levels
	m.Levels.Values = cloneRows(b.Levels.Values)
	if len(m.Temporal) == 0 {
		m.Temporal = []Temporal{{Kernel: "matern32"}}
	}
	for i := range m.Temporal {
		t := &m.Temporal[i]
		if (t.Kernel == "periodic" || t.Kernel == "quasiperiodic") && t.Harmonics == 0 {
			t.Harmonics = DefaultHarmonics
		}
		if t.Kernel == "quasiperiodic" && t.MaternOrder == 0 {
			t.MaternOrder = 12
		}
	}
	learn := false
	out.Fit.Learn = &learn
	if err := out.Model.Mean.fitted(b.Mean, sum.Names); err != nil {
		return Spec{}, err
	}
	if err := checkSeparable(b); err != nil {
		return Spec{}, err
	}
	fields, err := out.fields(b)
	if err != nil {
		return Spec{}, err
	}
	for i, p := range b.Parameters() {
		*fields[i] = p.Value
	}
	if err := out.exact(b, sum, fields); err != nil {
		return Spec{}, err
	}
	return out, out.Validate()
}

// clone copies s deeply enough that Fitted can set values.
func (s Spec) clone() Spec {
	out := s
	out.Model.Temporal = slices.Clone(s.Model.Temporal)
	for i := range out.Model.Temporal {
		out.Model.Temporal[i].FixedParams = slices.Clone(s.Model.Temporal[i].FixedParams)
	}
	out.Model.Product.Lengthscales = slices.Clone(s.Model.Product.Lengthscales)
	out.Model.Mean.Values = maps.Clone(s.Model.Mean.Values)
	out.Model.Levels.Values = cloneRows(s.Model.Levels.Values)
	if s.Fit.Learn != nil {
		v := *s.Fit.Learn
		out.Fit.Learn = &v
	}
	if s.Fit.Staged != nil {
		v := *s.Fit.Staged
		out.Fit.Staged = &v
	}
	return out
}

// fields returns, per parameter of b (Built.Parameters order), the field
// of s that configures it.
func (s *Spec) fields(b *Built) ([]*float64, error) {
	m := &s.Model
	names := b.Model.ParamNames()
	for _, n := range b.Lik.ParamNames() {
		names = append(names, "likelihood."+n)
	}
	if m.Product.Kernel != "" && m.Product.Kernel != "independent" {
		// Always the list: it gives back the kernel's number of lengthscales.
		m.Product.Lengthscales = make([]float64, len(b.Model.ParamNames()))
		m.Product.Lengthscale = 0
	}
	out := make([]*float64, len(names))
	nls := 0
	var sink float64 // separable parts after the first: variance 1, not configurable
	for i, n := range names {
		var f *float64
		var err error
		switch {
		case strings.HasPrefix(n, "temporal."):
			f, err = m.temporalField(strings.TrimPrefix(n, "temporal."))
		case strings.HasPrefix(n, "product."):
			f, nls, err = m.productField(strings.TrimPrefix(n, "product."), nls, &sink)
		case n == "likelihood.variance":
			f = &m.NoiseVariance
		case n == "likelihood.noise_slope":
			f = &m.NoiseSlope
		case n == "likelihood.lengthscale":
			f = &m.Diffusion.Lengthscale
		case n == "likelihood.sink":
			f = &m.Diffusion.Sink
		default:
			err = fmt.Errorf("parameter %q has no configuration key", n)
		}
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	if m.Product.Lengthscales != nil {
		m.Product.Lengthscales = m.Product.Lengthscales[:nls]
	}
	return out, nil
}

// temporalField maps a temporal parameter name ("variance" with one
// component, "1.period" with several) to its field.
func (m *Model) temporalField(n string) (*float64, error) {
	comp := 0
	if len(m.Temporal) > 1 {
		i := strings.IndexByte(n, '.')
		c, err := strconv.Atoi(n[:max(i, 0)])
		if i < 0 || err != nil || c < 0 || c >= len(m.Temporal) {
			return nil, fmt.Errorf("temporal parameter %q has no configuration key", n)
		}
		comp, n = c, n[i+1:]
	}
	t := &m.Temporal[comp]
	switch n {
	case "variance":
		return &t.Variance, nil
	case "lengthscale":
		return &t.Lengthscale, nil
	case "period":
		return &t.Period, nil
	case "matern_lengthscale":
		return &t.MaternLengthscale, nil
	}
	return nil, fmt.Errorf("temporal parameter %q has no configuration key", n)
}

// productField maps a product-kernel parameter name to its field; nls
// counts the lengthscales seen. Separable parts after the first have a
// variance the format cannot hold: it goes to sink and must stay 1.
func (m *Model) productField(n string, nls int, sink *float64) (*float64, int, error) {
	p := &m.Product
	part := -1
	if i := strings.IndexByte(n, '.'); i > 0 {
		if c, err := strconv.Atoi(n[:i]); err == nil {
			part, n = c, n[i+1:]
		}
	}
	switch {
	case n == "variance" && part <= 0:
		return &p.Variance, nls, nil
	case n == "variance":
		return sink, nls, nil
	case n == "lengthscale" || strings.HasPrefix(n, "lengthscale."):
		return &p.Lengthscales[nls], nls + 1, nil
	}
	return nil, nls, fmt.Errorf("product parameter %q has no configuration key", n)
}

// exact rebuilds the configuration and moves each value by at most
// maxNudge ulps until the rebuilt unconstrained parameters equal b's bit
// for bit (a value v stored as softplus⁻¹(v) may need the neighbour of
// softplus(θ) to give θ back).
func (s *Spec) exact(b *Built, sum Summary, fields []*float64) error {
	want := append(b.Model.Params(nil), b.Lik.Params(nil)...)
	for round := 0; ; round++ {
		nb, err := s.Build(sum, "")
		if err != nil {
			return fmt.Errorf("rebuilding the fitted model: %w", err)
		}
		got := append(nb.Model.Params(nil), nb.Lik.Params(nil)...)
		if len(got) != len(want) {
			return fmt.Errorf("rebuilt model has %d parameters, want %d", len(got), len(want))
		}
		bad := -1
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				bad = i
				break
			}
		}
		if bad < 0 {
			return nil
		}
		if round >= 2*maxNudge*len(want) {
			return fmt.Errorf("parameter %d: no value gives back %v exactly (got %v) %w", bad, want[bad], got[bad], ErrNotSavable)
		}
		if err := nudge(fields[bad], got[bad] < want[bad], round); err != nil {
			return err
		}
	}
}

// nudge moves *f one ulp towards larger unconstrained values (up) or
// smaller ones: every mapping value → parameter is increasing.
func nudge(f *float64, up bool, round int) error {
	if up {
		*f = math.Nextafter(*f, math.Inf(1))
	} else {
		*f = math.Nextafter(*f, math.Inf(-1))
	}
	if math.IsInf(*f, 0) || *f <= 0 && round > 0 {
		return fmt.Errorf("value out of range while matching the fitted parameter %w", ErrNotSavable)
	}
	return nil
}

// checkSeparable refuses separable product kernels whose later parts
// learned a variance other than 1: the format has one product variance.
func checkSeparable(b *Built) error {
	for _, p := range b.Parameters() {
		var part int
		if _, err := fmt.Sscanf(p.Name, "product.%d.variance", &part); err == nil && part > 0 && p.Value != 1 {
			return fmt.Errorf("%s = %v: the configuration has one product variance %w", p.Name, p.Value, ErrNotSavable)
		}
	}
	return nil
}

// cloneRows copies a matrix row by row (nil stays nil).
func cloneRows(rows [][]float64) [][]float64 {
	if rows == nil {
		return nil
	}
	out := make([][]float64, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
	}
	return out
}
