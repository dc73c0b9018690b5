package spec

import (
	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/internal/mathx"
)

// Parameter is one hyperparameter of a built model in the user's units.
type Parameter struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Learned bool    `json:"learned"`
}

// Parameters returns every hyperparameter of the model and likelihood
// with its value in the user's units (variances, lengthscales and periods
// as configured; the sink as a probability) and whether learning may move
// it, so `fit`, the demo and the daemon report the same thing.
func (b *Built) Parameters() []Parameter {
	names := b.Model.ParamNames()
	var vals []float64
	for _, raw := range b.Model.Params(nil) {
		vals = append(vals, mathx.Softplus(raw)) // every kernel parameter is positive
	}
	for _, n := range b.Lik.ParamNames() {
		names = append(names, "likelihood."+n)
	}
	if pv, ok := b.Lik.(cvi.ParamValuer); ok {
		vals = append(vals, pv.ParamValues(nil)...)
	} else {
		for _, raw := range b.Lik.Params(nil) {
			vals = append(vals, mathx.Softplus(raw))
		}
	}
	out := make([]Parameter, len(names))
	for i, n := range names {
		out[i] = Parameter{Name: n, Value: vals[i], Learned: b.Learn && !b.Fixed[n]}
	}
	return out
}
