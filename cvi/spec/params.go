package spec

import (
	"strings"

	"github.com/dcgpd/dcgpd/diffusion"
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
	raw := b.Model.Params(nil)
	for _, n := range b.Lik.ParamNames() {
		names = append(names, "likelihood."+n)
	}
	raw = append(raw, b.Lik.Params(nil)...)
	out := make([]Parameter, len(names))
	for i, n := range names {
		v := mathx.Softplus(raw[i])
		if strings.HasSuffix(n, ".sink") {
			v, _ = diffusion.SinkFromRaw(raw[i])
		}
		out[i] = Parameter{Name: n, Value: v, Learned: b.Learn && !b.Fixed[n]}
	}
	return out
}
