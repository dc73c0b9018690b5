package spec

import (
	"fmt"

	"github.com/dcgpd/dcgpd/cvi"
)

// buildLikelihood builds the configured likelihood and pins its fixed
// parameters.
func buildLikelihood(m Model, sum Summary, fixed map[string]bool) (cvi.Likelihood, error) {
	nv := m.NoiseVariance
	if nv == 0 {
		nv = 0.1 * sum.Variance
	}
	pinNoise := func(l interface{ ParamNames() []string }) {
		if m.NoiseFixed {
			for _, n := range l.ParamNames() {
				if n == "variance" {
					fixed["likelihood."+n] = true
				}
			}
		}
	}
	switch m.Likelihood {
	case "gaussian":
		g, err := cvi.NewGaussian(nv)
		if err != nil {
			return nil, fmt.Errorf("model.noise_variance: %w", err)
		}
		pinNoise(g)
		return cvi.Factorised{Scalar: g}, nil
	case "tobit":
		t, err := cvi.NewTobit(nv)
		if err != nil {
			return nil, fmt.Errorf("model.noise_variance: %w", err)
		}
		pinNoise(t)
		return cvi.Factorised{Scalar: t}, nil
	case "poisson":
		p, err := cvi.NewPoisson(cvi.ExpLink)
		if err != nil {
			return nil, err
		}
		return cvi.Factorised{Scalar: p}, nil
	case "censored-poisson":
		p, err := cvi.NewCensoredPoisson(cvi.ExpLink)
		if err != nil {
			return nil, err
		}
		return cvi.Factorised{Scalar: p}, nil
	case "diffusion":
		return buildDiffusion(m, sum, nv, fixed)
	}
	return nil, fmt.Errorf("model.likelihood %q unknown", m.Likelihood)
}
