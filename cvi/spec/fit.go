package spec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/filter"
)

// Stage is one fit of a staged fit.
type Stage struct {
	// Likelihood is the stage's likelihood (e.g. "tobit").
	Likelihood string
	Result     cvi.Result
	Elapsed    time.Duration
}

// Fitted is a model fitted by Spec.Learn.
type Fitted struct {
	*Built
	Engine *cvi.Engine
	// Result is the final fit's; Stages are the fits before it (the
	// staged Tobit fit), empty when the fit was not staged.
	Result cvi.Result
	Stages []Stage
	// Warnings about the staging (the final fit's are in Result).
	Warnings []string
}

// StagedOn reports whether [fit] staged is on (the default).
func (f Fit) StagedOn() bool { return f.Staged == nil || *f.Staged }

// Learn builds the configured model for data (summarised by sum; likelihood,
// if not empty, overrides model.likelihood as in Build) and fits it: with
// [fit] learn (default) it learns the hyperparameters, otherwise it fits
// the sites at the starting values. With the diffusion likelihood and
// [fit] staged (default) it first fits the Tobit likelihood with the same
// prior, the cheap model, and starts the diffusion fit's kernel
// hyperparameters and noise variance at the Tobit fit's (the diffusion
// lengthscale and sink keep their configured starts). progress, if not
// nil, receives every major iteration with the stage's likelihood name.
//
// With a prior mean ([model.mean]) the likelihood sees the data shifted by
// it; with values to estimate, see learnMean. Fitted.Engine then holds the
// shifted data: add Built.Mean back to its posterior.
func (s Spec) Learn(ctx context.Context, data *cvi.Data, sum Summary, likelihood string, progress func(stage string, p cvi.Progress)) (*Fitted, error) {
	if mn := s.Model.Mean; mn.On() && mn.EstimateOn() && (s.Fit.Learn == nil || *s.Fit.Learn) {
		return s.learnMean(ctx, data, sum, likelihood, progress)
	}
	return s.learn(ctx, data, sum, likelihood, progress, nil)
}

// learn is Learn with the prior mean mean (nil: the configured values, if
// any).
func (s Spec) learn(ctx context.Context, data *cvi.Data, sum Summary, likelihood string, progress func(stage string, p cvi.Progress), mean *Profile) (*Fitted, error) {
	// The level source's values, computed from the data when not given
	// (model.levels); Boundary sets the cells' levels.
	s.Model.Levels.Values = cloneRows(s.Model.Levels.Values)
	if err := s.Model.Levels.fill(data, sum); err != nil {
		return nil, err
	}
	b, err := s.Build(sum, likelihood)
	if err != nil {
		return nil, err
	}
	if mean != nil {
		b.Mean = mean
	}
	if s.Model.Mean.On() && b.Mean == nil {
		return nil, errors.New("model.mean: no values (give them, or learn with estimate = true)")
	}
	// The levels alone leave every value as it is; only the mean's shift
	// changes the data's scale and so the defaults.
	data = b.Boundary().PrepareData(data)
	if b.Mean != nil {
		names, capacity := sum.Names, sum.Capacity
		sum = Summarise(data, sum.Features, sum.Geographic)
		sum.Names, sum.Capacity = names, capacity
		// Rebuild: values left to default start from the residual's scale.
		if b, err = s.Build(sum, likelihood); err != nil {
			return nil, err
		}
		if mean != nil {
			b.Mean = mean
		}
	}
	f := &Fitted{Built: b}
	_, diffusion := b.Lik.(*cvi.Diffusion)
	if diffusion && b.Learn && s.Fit.StagedOn() {
		start := time.Now()
		bt, err := s.Build(sum, "tobit")
		if err != nil {
			return nil, fmt.Errorf("staged fit: %w", err)
		}
		et, err := cvi.NewEngine(bt.Model, bt.Lik, data)
		if err != nil {
			return nil, fmt.Errorf("staged fit: %w", err)
		}
		opts := bt.Options
		if progress != nil {
			opts.Progress = func(p cvi.Progress) { progress("tobit", p) }
		}
		res, err := et.Learn(ctx, opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			f.Warnings = append(f.Warnings, fmt.Sprintf("staged Tobit fit failed (%v): the diffusion fit starts from the configured values", err))
		} else {
			f.Stages = append(f.Stages, Stage{Likelihood: "tobit", Result: res, Elapsed: time.Since(start)})
			if err := startFrom(b, bt); err != nil {
				return nil, fmt.Errorf("staged fit: %w", err)
			}
		}
	}
	e, err := cvi.NewEngine(b.Model, b.Lik, data)
	if err != nil {
		return nil, err
	}
	f.Engine = e
	if !b.Learn {
		n, elbo, err := e.Converge(1, 1e-9, 500)
		f.Result = cvi.Result{ELBO: elbo, SearchELBO: elbo, CVISteps: n, Status: StatusNotLearned, Detail: "[fit] learn = false: the sites fitted at the starting hyperparameters"}
		return f, err
	}
	opts := b.Options
	if progress != nil {
		opts.Progress = func(p cvi.Progress) { progress(b.Likelihood, p) }
	}
	f.Result, err = e.Learn(ctx, opts)
	return f, err
}

// StatusNotLearned is the status of a fit with [fit] learn = false.
const StatusNotLearned = "not learned"

// startFrom sets b's model parameters, and its likelihood parameters that
// from's likelihood shares by name (the noise variance), to from's.
func startFrom(b, from *Built) error {
	if err := b.Model.SetParams(from.Model.Params(nil)); err != nil {
		return err
	}
	src := map[string]float64{}
	names := from.Lik.ParamNames()
	for i, v := range from.Lik.Params(nil) {
		src[names[i]] = v
	}
	p := b.Lik.Params(nil)
	for i, n := range b.Lik.ParamNames() {
		if v, ok := src[n]; ok {
			p[i] = v
		}
	}
	return b.Lik.SetParams(p)
}

// learnMean estimates the prior mean, censoring-aware, then learns the GP
// on the residual. First pass: the model is learned with a zero mean, with
// the Tobit likelihood when the configured one is the diffusion (the
// staged fit's first stage: the cheap model, censoring-aware), and the
// smoothed posterior mean of f is averaged per cell of the period and
// product over the observed bins (EstimateProfile). Second pass: Learn as
// without a mean, on y − m and u − m. The cost is the first pass: one
// Tobit learn more than a staged diffusion fit without a mean.
func (s Spec) learnMean(ctx context.Context, data *cvi.Data, sum Summary, likelihood string, progress func(stage string, p cvi.Progress)) (*Fitted, error) {
	b, err := s.Build(sum, likelihood)
	if err != nil {
		return nil, err
	}
	first := s
	first.Model.Mean = Mean{}
	firstLik := likelihood
	if _, diffusion := b.Lik.(*cvi.Diffusion); diffusion && s.Model.Mean.FirstPass != "model" {
		firstLik = "tobit"
	}
	start := time.Now()
	stage := "mean"
	pf, err := first.learn(ctx, data, sum, firstLik, func(_ string, p cvi.Progress) {
		if progress != nil {
			progress(stage, p)
		}
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("model.mean: first pass: %w", err)
	}
	var post filter.Posterior
	if err := pf.Engine.PredictAll(&post); err != nil {
		return nil, fmt.Errorf("model.mean: first pass: %w", err)
	}
	step := s.Model.Mean.Step
	if step == 0 {
		step = sum.MedianStep
	}
	prof, err := EstimateProfile(s.Model.Mean.period(), step, data.Times, data.Obs, post.Mean, data.NP)
	if err != nil {
		return nil, err
	}
	firstStages := append(pf.Stages, Stage{Likelihood: pf.Built.Likelihood + " (prior mean, first pass)", Result: pf.Result, Elapsed: time.Since(start)})
	f, err := s.learn(ctx, data, sum, likelihood, progress, prof)
	if err != nil {
		return nil, err
	}
	f.Stages = append(firstStages, f.Stages...)
	f.Warnings = append(pf.Warnings, f.Warnings...)
	return f, nil
}
