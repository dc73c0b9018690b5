package backtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/csvio"
)

// ErrParameter reports a learned parameter the configuration cannot hold.
var ErrParameter = errors.New("parameter")

// Learn fits s's model to the rows of o before the hours-since-epoch time
// until (the training span) as `dcgpd fit` does, and returns the model
// configuration with every hyperparameter set to its fitted value, ready
// for the daemon with learning off.
func Learn(ctx context.Context, s spec.Spec, o *csvio.Obs, prods *csvio.Products, until float64, progress func(string)) (spec.Model, error) {
	train := &csvio.Obs{Name: o.Name + " (training span)", Kind: o.Kind}
	for _, r := range o.Rows {
		if r.Time < until {
			train.Rows = append(train.Rows, r)
		}
	}
	if len(train.Rows) == 0 {
		return spec.Model{}, errors.New("the training span has no rows")
	}
	grid, err := csvio.Build(train, prods)
	if err != nil {
		return spec.Model{}, err
	}
	if err := grid.Data.Validate(); err != nil {
		return spec.Model{}, fmt.Errorf("training span: %w", err)
	}
	sum := spec.Summarise(grid.Data, prods.Features, prods.Geographic)
	sum.Names = prods.Names
	f, err := s.Learn(ctx, grid.Data, sum, "", nil)
	if err != nil {
		return spec.Model{}, fmt.Errorf("learning on the training span: %w", err)
	}
	if progress != nil {
		progress(fmt.Sprintf("learned on %d rows: ELBO %.4f, %s (%s)", len(train.Rows), f.Result.ELBO, f.Result.Status, f.Result.Detail))
		if p := f.Built.Mean; p != nil {
			progress(fmt.Sprintf("with a prior mean of %d cells × %d products estimated on the training span", p.Cells, len(p.M)))
		}
	}
	m := s.Model
	m.Likelihood = f.Built.Likelihood
	m.Levels = f.Built.Levels // with the values learned on the training span
	if f.Built.Mean != nil {
		if m.Mean, err = f.Built.Mean.Table(prods.Names); err != nil {
			return spec.Model{}, err
		}
		m.Mean.Level, m.Mean.SignalPower = s.Model.Mean.Level, s.Model.Mean.SignalPower // how the daemon moves it: the configuration's
	}
	return WithParameters(m, f.Built.Parameters())
}

// WithParameters returns m with the values of ps (names as
// spec.Built.Parameters gives them) written into its keys.
func WithParameters(m spec.Model, ps []spec.Parameter) (spec.Model, error) {
	if m.PerProduct {
		return m, fmt.Errorf("%w: per_product models are not supported here; give their values in the configuration", ErrParameter)
	}
	if len(m.Temporal) == 0 {
		m.Temporal = []spec.Temporal{{Kernel: "matern32"}}
	}
	m.Temporal = append([]spec.Temporal(nil), m.Temporal...)
	for _, p := range ps {
		if err := setParameter(&m, p.Name, p.Value); err != nil {
			return m, err
		}
	}
	return m, nil
}

func setParameter(m *spec.Model, name string, v float64) error {
	parts := strings.Split(name, ".")
	bad := fmt.Errorf("%w: %q has no configuration key", ErrParameter, name)
	switch parts[0] {
	case "temporal":
		i := 0
		if len(parts) == 3 {
			var err error
			if i, err = strconv.Atoi(parts[1]); err != nil || i < 0 || i >= len(m.Temporal) {
				return bad
			}
		} else if len(parts) != 2 || len(m.Temporal) != 1 {
			return bad
		}
		t := &m.Temporal[i]
		switch parts[len(parts)-1] {
		case "variance":
			t.Variance = v
		case "lengthscale":
			t.Lengthscale = v
		case "period":
			t.Period = v
		case "matern_lengthscale":
			t.MaternLengthscale = v
		default:
			return bad
		}
	case "product":
		switch {
		case name == "product.variance":
			m.Product.Variance = v
		case name == "product.lengthscale":
			m.Product.Lengthscale = v
		case len(parts) == 3 && parts[1] == "lengthscale":
			d, err := strconv.Atoi(parts[2])
			if err != nil || d < 0 || d > 64 {
				return bad
			}
			for len(m.Product.Lengthscales) <= d {
				m.Product.Lengthscales = append(m.Product.Lengthscales, 0)
			}
			m.Product.Lengthscales[d] = v
		default:
			return bad
		}
	case "likelihood":
		switch name {
		case "likelihood.variance":
			m.NoiseVariance = v
		case "likelihood.lengthscale":
			m.Diffusion.Lengthscale = v
		case "likelihood.sink":
			m.Diffusion.Sink = v
		case "likelihood.noise_slope":
			m.NoiseSlope = v
		default:
			return bad
		}
	default:
		return bad
	}
	return nil
}
