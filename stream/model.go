package stream

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/stream/csvio"
	"github.com/rs/zerolog"
)

// secondsPerHour converts to the model's time unit: kernel lengthscales
// and periods are in hours, as `dcgpd fit` reads timestamps.
const secondsPerHour = 3600

// ModelTime returns the model time (hours since the Unix epoch) of t.
func ModelTime(unixSeconds int64) float64 { return float64(unixSeconds) / secondsPerHour }

// loadProducts reads a model's products from its file or inline list.
func loadProducts(c *config.Config, m *config.ModelConfig) (*csvio.Products, error) {
	if m.Products != "" {
		path := c.Path(m.Products)
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("products: %w", err)
		}
		defer f.Close()
		return csvio.ReadProducts(f, path)
	}
	var b []byte
	b = append(b, "product"...)
	for j := range m.Product[0].Features {
		if m.Geographic && len(m.Product[0].Features) == 2 {
			b = append(b, []string{",lat", ",lon"}[j]...)
		} else {
			b = append(b, fmt.Sprintf(",x%d", j)...)
		}
	}
	b = append(b, '\n')
	for _, p := range m.Product {
		b = append(b, p.Name...)
		for _, v := range p.Features {
			b = append(b, fmt.Sprintf(",%v", v)...)
		}
		b = append(b, '\n')
	}
	return csvio.ReadProducts(bytes.NewReader(b), "models."+m.Name+".product")
}

// buildModel assembles a model's prior and likelihood from its
// configuration exactly as `dcgpd fit` does from a config file, with the
// bin width as the time step. With no data at start, variances the
// configuration leaves at 0 start at 1 (set them, or let re-learning
// find them).
func buildModel(prods *csvio.Products, m *config.ModelConfig) (*spec.Built, error) {
	sum := spec.Summary{Variance: 1, MedianStep: m.Bin.Hours(), Features: prods.Features,
		Geographic: prods.Geographic, NP: len(prods.Names), Names: prods.Names, Capacity: prods.Capacity}
	if len(prods.Features) > 0 && len(prods.Features[0]) == 0 {
		sum.Features = nil
	}
	b, err := spec.Spec{Model: m.Model, Fit: m.Fit}.Build(sum, "")
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if m.Model.Mean.On() && b.Mean == nil {
		return nil, errors.New("model.mean: the daemon needs its values (model_file from `dcgpd fit --save-model`, or [model.mean.values]); it does not estimate them")
	}
	if err := config.CheckCoupledSize(sum.NP, !b.Model.Independent(), b.Lik.Joint()); err != nil {
		return nil, err
	}
	return b, nil
}

// logPooling logs, in one line, which products got the pooled prior mean
// (no row in the model's model.mean.values) and how; nothing when every
// product has its own row and every row a product.
func logPooling(log zerolog.Logger, p spec.Pooling, modelFile string) {
	if p.Pooled() == 0 && p.Unused == 0 {
		return
	}
	log.Info().Str("model_file", modelFile).Int("pooled", p.Pooled()).Int("by_capacity", p.Count(spec.PoolByCapacity)).
		Int("by_neighbours", p.Count(spec.PoolByNeighbours)).Int("by_mean", p.Count(spec.PoolByMean)).
		Int("own_rows", p.Own).Int("unused_rows", p.Unused).Msg(p.String() + "; the online level corrects them (model.mean level = \"scale\")")
}

// likelihoodClone returns an independent copy of lik with the same
// parameters, for a background re-smooth.
func likelihoodClone(prods *csvio.Products, m *config.ModelConfig, lik cvi.Likelihood) (cvi.Likelihood, error) {
	b, err := buildModel(prods, m)
	if err != nil {
		return nil, err
	}
	if err := b.Lik.SetParams(lik.Params(nil)); err != nil {
		return nil, err
	}
	return b.Lik, nil
}
