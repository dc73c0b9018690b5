package spec

import (
	"fmt"
	"os"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/diffusion"
)

// buildDiffusion builds the diffusion-aware Tobit likelihood.
func buildDiffusion(m Model, sum Summary, variance, slope float64, fixed map[string]bool) (cvi.Likelihood, error) {
	d := m.Diffusion
	if sum.NP < 2 {
		return nil, fmt.Errorf("model.likelihood diffusion needs at least 2 products, have %d", sum.NP)
	}
	opts := cvi.DiffusionOptions{
		Variance:    variance,
		LevelNoise:  m.LevelNoise,
		NoiseSlope:  slope,
		Steps:       d.Steps,
		SupplyAware: d.Mode == "available",
		Points:      d.Points,
		LearnPoints: d.LearnPoints,
		Sink:        d.Sink,
	}
	if d.Expectation == "meanonly" {
		opts.Expectation = cvi.MeanOnly
	}
	if d.Sites != "full" { // diagonal by default (README: site structure)
		opts.Sites = cvi.DiagonalSites
	}
	switch d.Curvature {
	case "exact":
		opts.Curvature = cvi.ExactCurvature
	case "gauss-newton":
		opts.Curvature = cvi.GaussNewton
	}
	if d.Transition != "" {
		f, err := os.Open(d.Transition)
		if err != nil {
			return nil, fmt.Errorf("model.diffusion.transition: %w", err)
		}
		defer f.Close()
		if sum.Names == nil {
			return nil, fmt.Errorf("model.diffusion.transition needs product names")
		}
		t, err := diffusion.ReadTransitionCSV(f, sum.Names)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Transition, err)
		}
		opts.Explicit = t
	} else {
		if len(sum.Features) != sum.NP {
			return nil, fmt.Errorf("model.likelihood diffusion needs product features (or model.diffusion.transition)")
		}
		metric := diffusion.Euclidean
		if sum.Geographic {
			metric = diffusion.GreatCircle
		}
		g, err := diffusion.NewGraph(sum.Features, diffusion.GraphOptions{Metric: metric, K: d.Neighbours, Cutoff: d.Cutoff})
		if err != nil {
			return nil, fmt.Errorf("model.diffusion: %w", err)
		}
		opts.Graph = g
		opts.Lengthscale = d.Lengthscale
		if opts.Lengthscale == 0 {
			opts.Lengthscale = medianNeighbourDistance(sum.Features, sum.Geographic)
		}
	}
	lik, err := cvi.NewDiffusion(opts)
	if err != nil {
		return nil, err
	}
	if m.NoiseFixed {
		fixed["likelihood.variance"] = true
	}
	if m.NoiseSlopeFixed {
		fixed["likelihood."+cvi.NoiseSlopeName] = true
	}
	if !d.Learn && opts.Explicit == nil {
		fixed["likelihood.lengthscale"] = true
		fixed["likelihood.sink"] = true
	}
	return lik, nil
}
