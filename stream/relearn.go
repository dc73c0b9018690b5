package stream

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/mathx"
)

// Re-learning's guards, so that one odd week (a storm, a holiday, an
// outage) cannot switch a component off for good:
//   - every re-learn starts from the anchor, the hyperparameters the
//     model started with (its configuration's: a model file's fit), not
//     from the last re-learn's, so nothing a window did compounds;
//   - every variance (the kernels', the noise's) is floored at
//     RelearnFloor times the anchor's: a variance driven to ~0 has a
//     vanishing gradient in log θ and would never come back;
//   - the window's last RelearnHoldBack bins (at most a quarter of it)
//     are held back from learning, and the re-learned hyperparameters
//     are swapped in only if their forecasts of those bins from the
//     learning span's end (h = 1 … RelearnHoldBack) have a lower mean
//     CRPS over the uncensored observed cells than the hyperparameters
//     in use, both fitted to the same bins.
const (
	RelearnFloor    = 0.05
	RelearnHoldBack = 24
)

// relearnAnchor is where a re-learn starts and what bounds it: raw
// hyperparameters (stored form) and the floors of the search
// (cvi.LearnOptions.Floors, natural units).
type relearnAnchor struct {
	model, lik []float64
	floors     []float64
}

// setAnchor sets job's anchor from the model's configuration.
func (r *Runner) setAnchor(job *resmoothJob) error {
	b, err := buildModel(r.prods, &r.cfg)
	if err != nil {
		return err
	}
	a := relearnAnchor{model: b.Model.Params(nil), lik: b.Lik.Params(nil)}
	names := b.Model.ParamNames()
	if r.cfg.Model.Mean.SignalFollowsLevel() {
		// The configuration's variances are of the fitted level; the
		// window's is the one in use.
		spec.ScaleVariances(a.model, names, spec.SignalFactor(r.built.MeanScale(), r.cfg.Model.Mean.SignalPower))
	}
	for _, n := range b.Lik.ParamNames() {
		names = append(names, "likelihood."+n)
	}
	raw := append(append([]float64(nil), a.model...), a.lik...)
	a.floors = make([]float64, len(raw))
	for i, n := range names {
		if strings.HasSuffix(n, "variance") {
			a.floors[i] = RelearnFloor * mathx.Softplus(raw[i])
		}
	}
	job.anchor = a
	return nil
}

// relearn re-learns the hyperparameters on the window (as a data set of
// its own: stationary prior) less its held-back bins, from the anchor and
// above the floors, and accepts them only if they are finite and forecast
// the held-back bins better than those in use (see RelearnFloor).
func relearn(ctx context.Context, job *resmoothJob, data *cvi.Data, res *resmoothResult) error {
	nb := len(job.bins)
	hold := max(1, min(RelearnHoldBack, nb/4))
	split := nb - hold
	np := data.NP
	learnData := &cvi.Data{NP: np, Times: data.Times[:split], Obs: data.Obs[:split*np]}
	base, err := cvi.NewEngine(job.model.Clone(), job.lik, learnData)
	if err != nil {
		return err
	}
	warmStart(base, job.bins[:split])
	if _, _, err := base.Converge(1, 1e-6, 200); err != nil {
		return fmt.Errorf("CVI at the current hyperparameters: %w", err)
	}
	before, err := heldBackCRPS(base, job, data, split)
	if err != nil {
		return fmt.Errorf("held-back forecasts at the current hyperparameters: %w", err)
	}
	saved := job.lik.Params(nil)
	model := job.model.Clone()
	if err := model.SetParams(job.anchor.model); err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	if err := job.lik.SetParams(job.anchor.lik); err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	e, err := cvi.NewEngine(model, job.lik, learnData)
	if err != nil {
		return err
	}
	if err := e.SetSites(base.Sites()); err != nil {
		return err
	}
	opts := job.learn
	opts.Floors = job.anchor.floors
	r, err := e.Learn(ctx, opts)
	var after float64
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		res.kept = "learning failed: " + err.Error()
	case math.IsNaN(r.ELBO) || math.IsInf(r.ELBO, 0) || !allFinite(model.Params(nil)) || !allFinite(job.lik.Params(nil)):
		res.kept = "learned hyperparameters are not finite"
	default:
		if after, err = heldBackCRPS(e, job, data, split); err != nil {
			res.kept = "held-back forecasts failed: " + err.Error()
		} else if !(after < before) {
			res.kept = fmt.Sprintf("held-back forecasts no better (mean CRPS %.6g, in use %.6g)", after, before)
		} else {
			res.model, res.swapped = model, true
			return nil
		}
	}
	// Put the likelihood back where it was: the anchor and Learn moved it.
	return job.lik.SetParams(saved)
}

// heldBackCRPS forecasts the window's bins from split on from the end of
// e's fit (its sites filtered through bins before split) and returns the
// mean Gaussian CRPS of the forecasts (latent variance plus the cell's
// noise) over the uncensored observed cells there, in data's values (the
// demand less the prior mean); NaN when there is none.
func heldBackCRPS(e *cvi.Engine, job *resmoothJob, data *cvi.Data, split int) (float64, error) {
	np := data.NP
	on, err := cvi.NewOnline(e.Model(), e.Likelihood(), job.online)
	if err != nil {
		return 0, err
	}
	sites := e.Sites()
	idx := make(map[int]int, len(e.Bins()))
	for i, n := range e.Bins() {
		idx[n] = i
	}
	var br cvi.BinResult
	for n := 0; n < split; n++ {
		if i, ok := idx[n]; ok {
			l1, l2 := sites.Bin(i)
			err = on.Apply(data.Times[n], l1, l2, &br)
		} else {
			err = on.Skip(data.Times[n], &br)
		}
		if err != nil {
			return 0, err
		}
	}
	mean, vars := make([]float64, np), make([]float64, np)
	var sum float64
	var cnt int
	dt := data.Times[split] - data.Times[split-1]
	lik := e.Likelihood()
	err = on.ForecastSteps(dt, len(data.Times)-split, mean, vars, nil, func(h int) {
		for k, o := range data.Bin(split - 1 + h) {
			if math.IsNaN(o.Y) || o.Censored {
				continue
			}
			sum += gaussianCRPS(mean[k], math.Sqrt(vars[k]+cvi.NoiseVarianceAt(lik, o.Level)), o.Y)
			cnt++
		}
	})
	if err != nil {
		return 0, err
	}
	if cnt == 0 {
		return math.NaN(), nil
	}
	return sum / float64(cnt), nil
}

// gaussianCRPS is the CRPS of N(m, s²) at y (Gneiting & Raftery 2007).
func gaussianCRPS(m, s, y float64) float64 {
	if !(s > 0) {
		return math.Abs(y - m)
	}
	z := (y - m) / s
	return s * (z*math.Erf(z/math.Sqrt2) + 2*math.Exp(-z*z/2)/math.Sqrt(2*math.Pi) - 1/math.Sqrt(math.Pi))
}
