package cvi

import (
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/internal/errs"
)

// PredictAll smooths over every bin of the data — observed bins with their
// current sites, the others with none — and writes the posterior of the
// latent demand at all of them into dst (Mean, Var and, for coupled
// products, Cov). When every product is its own chain (an independent
// model with diagonal sites) it keeps only those marginals, one chain's
// bins at a time, so dst cannot Predict; its numbers are the smoother's
// either way.
func (e *Engine) PredictAll(dst *filter.Posterior) error {
	np := e.data.NP
	all := filter.NewSites(len(e.data.Times), np, e.sites.Full)
	for i, n := range e.bins {
		s1, s2 := e.sites.Bin(i)
		d1, d2 := all.Bin(n)
		copy(d1, s1)
		copy(d2, s2)
	}
	smooth := filter.Smooth
	if e.model.Independent() && !all.Full {
		smooth = filter.SmoothMarginals
	}
	if err := smooth(dst, e.model, e.data.Times, all); err != nil {
		return errs.Within("cvi", err, "predict")
	}
	return nil
}
