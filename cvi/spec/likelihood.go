package spec

import (
	"errors"
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
	if n := len(m.Levels.Values); n > 0 && n != sum.NP {
		return nil, fmt.Errorf("model.levels: values for %d products, the data have %d", n, sum.NP)
	}
	slope := m.NoiseSlope
	if slope == 0 {
		slope = DefaultNoiseSlope
	}
	pinNoise := func(l interface{ ParamNames() []string }) {
		for _, n := range l.ParamNames() {
			if n == "variance" && m.NoiseFixed || n == cvi.NoiseSlopeName && m.NoiseSlopeFixed {
				fixed["likelihood."+n] = true
			}
		}
	}
	switch m.Likelihood {
	case "gaussian":
		g, err := cvi.NewGaussian(nv)
		if err != nil {
			return nil, fmt.Errorf("model.noise_variance: %w", err)
		}
		if m.LevelNoise {
			if err := g.SetLevelNoise(slope); err != nil {
				return nil, fmt.Errorf("model.noise_slope: %w", err)
			}
		}
		pinNoise(g)
		return cvi.Factorised{Scalar: g}, nil
	case "tobit":
		t, err := cvi.NewTobit(nv)
		if err != nil {
			return nil, fmt.Errorf("model.noise_variance: %w", err)
		}
		if m.LevelNoise {
			if err := t.SetLevelNoise(slope); err != nil {
				return nil, fmt.Errorf("model.noise_slope: %w", err)
			}
		}
		pinNoise(t)
		return cvi.Factorised{Scalar: t}, nil
	case "poisson", "censored-poisson":
		if m.LevelNoise {
			return nil, fmt.Errorf("model.level_noise: the %s likelihood has no additive noise (gaussian, tobit or diffusion)", m.Likelihood)
		}
	}
	switch m.Likelihood {
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
		return buildDiffusion(m, sum, nv, slope, fixed)
	}
	return nil, fmt.Errorf("model.likelihood %q unknown", m.Likelihood)
}

// DefaultNoiseSlope is the starting slope c of level-dependent noise
// (model.level_noise) when model.noise_slope is 0: half of a Poisson
// count's variance-to-mean ratio.
const DefaultNoiseSlope = 0.5

// validateLevelNoise checks model.level_noise and model.noise_slope.
func (m *Model) validateLevelNoise() error {
	switch {
	case m.NoiseSlope < 0:
		return fmt.Errorf("model.noise_slope must be > 0, got %v", m.NoiseSlope)
	case m.NoiseSlopeFixed && !m.LevelNoise:
		return errors.New("model.noise_slope_fixed needs model.level_noise = true")
	case m.NoiseSlope > 0 && !m.LevelNoise:
		return fmt.Errorf("model.noise_slope = %v needs model.level_noise = true", m.NoiseSlope)
	case m.LevelNoise && (m.Likelihood == "poisson" || m.Likelihood == "censored-poisson"):
		return fmt.Errorf("model.level_noise: the %s likelihood has no additive noise (gaussian, tobit or diffusion)", m.Likelihood)
	case m.Levels.Source != "" && !m.LevelNoise:
		return errors.New("model.levels needs model.level_noise = true")
	case m.Levels.Source != "" && m.Mean.On():
		return errors.New("model.levels with model.mean: the prior mean is the cells' level; omit model.levels")
	}
	return m.Levels.validate()
}
