package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// DefaultResmoothTolerance is the re-smooth's CVI convergence test when
// resmooth.tolerance is 0: a relative ELBO change below it, the one
// `dcgpd fit` with learn = false converges to, so that a re-smooth over
// every bin equals that fit. Warm-started from the window's sites a
// re-smooth takes 6 to 19 CVI steps to it; to 1e-6 (the learner's inner
// tolerance) 3 to 5, at less than half the CPU (BenchmarkCatchUp), and no
// published mean moves by more than 1% of its standard deviation
// (TestResmoothTolerance). resmoothMaxSteps bounds a re-smooth's steps.
// Both fix the re-smooth's result as a function of its inputs alone.
const (
	DefaultResmoothTolerance = 1e-9
	resmoothMaxSteps         = 500
)

// resmoothJob is what a background re-smooth works on: copies of the
// window's bins and of the model, so ingest goes on meanwhile.
type resmoothJob struct {
	bins    []windowBin
	start   *filter.State // the window's start state; nil = the prior
	model   *filter.Model
	lik     cvi.Likelihood
	relearn bool
	cells   spec.Boundary // prior mean and levels (immutable, shared)
	learn   cvi.LearnOptions
	online  cvi.OnlineOptions
	tol     float64 // CVI convergence test (resmooth.tolerance)
	// follow re-estimates the prior mean's levels ([model.mean] level =
	// "scale"): base is the fitted profile, scale the levels in cells.
	follow bool
	base   *spec.Profile
	scale  []float64
	// signal is [model.mean] signal_power: with follow, the GP's
	// variances follow the level too (spec.SignalFactor).
	signal float64
	// anchor holds the raw hyperparameters the model started with (its
	// configuration's, a model file's fit): where every re-learn starts
	// and what its floors are fractions of.
	anchor relearnAnchor
}

// resmoothResult is a finished re-smooth.
type resmoothResult struct {
	job *resmoothJob
	// Per job bin: the re-converged sites and the smoothed marginals.
	nat1, nat2 [][]float64
	mean, vars [][]float64
	// head is the filter state after the job's last bin under model.
	head filter.State
	// model and lik are the (possibly re-learned) hyperparameters.
	model   *filter.Model
	lik     cvi.Likelihood
	swapped bool // re-learned hyperparameters were accepted
	// rescaled: the level moved the GP's variances (signal_power), model
	// holds them.
	rescaled bool
	kept     string // why re-learned ones were not
	// cells is the prior mean and levels the sites are of; scale the
	// re-estimated levels (nil: unchanged, cells is the job's).
	cells    spec.Boundary
	scale    []float64
	elbo     float64
	steps    int // CVI steps of the final convergence
	duration time.Duration
	err      error
}

// pendingJob is a re-smooth in flight or finished, waiting for the bin
// it is swapped in at.
type pendingJob struct {
	job *resmoothJob
	// applyAt is the bin index before which it is swapped in; revision
	// the revision its smoothed estimates carry.
	applyAt  int64
	revision int
	res      *resmoothResult
	// Its hyperparameters at the start, for snapshots (the job's own
	// likelihood moves while it re-learns).
	modelParams, likParams []float64
	// launched: running (or run) in the background; a job restored from
	// a snapshot waits for resumeJob. abandoned: given up at its bin
	// (awaitJob), so its cancellation is counted there, not as a loss.
	launched  bool
	abandoned atomic.Bool
}

// startResmooth hands the window to a background re-smooth, swapped in
// before bin last+ApplyAfter, unless one is pending.
func (r *Runner) startResmooth(ctx context.Context, last int64) {
	if r.job != nil || r.win.count < 2 || ctx.Err() != nil {
		return
	}
	lik, err := likelihoodClone(r.prods, &r.cfg, r.built.Lik)
	if err != nil {
		r.log.Error().Err(err).Msg("re-smooth not started")
		return
	}
	// Re-learning waits for a full window: what it learns (a daily
	// component, the slow deviations) needs a week of hourly bins.
	full := r.win.count == len(r.win.bins)
	job := &resmoothJob{bins: r.win.copyFrom(0), model: r.built.Model.Clone(), lik: lik, relearn: r.cfg.Resmooth.Relearn && full, cells: r.built.Boundary()}
	if t, ok := r.tail.Filter().Time(); ok {
		s := r.tail.Filter().Save()
		s.Time = t
		job.start = &s
	}
	after := r.cfg.Resmooth.ApplyAfter
	if after == 0 {
		after = max(r.cfg.Resmooth.EveryBins, 1)
	}
	r.sinceResmooth = 0
	r.launchJob(ctx, &pendingJob{job: job, applyAt: last + int64(after), revision: r.revision + 1,
		modelParams: job.model.Params(nil), likParams: job.lik.Params(nil)})
}

// resumeJob launches a re-smooth restored from a snapshot under ctx, the
// runner's lifetime context (Run's): it then completes however the
// restore's context ends, and is swapped in at its own bin, as in an
// uninterrupted run. It does nothing if no restored job waits.
func (r *Runner) resumeJob(ctx context.Context) {
	if pj := r.job; pj != nil && !pj.launched {
		r.log.Info().Int64("apply_at", pj.applyAt).Int("revision", pj.revision).Msg("re-smooth resumed from the snapshot")
		r.launchJob(ctx, pj)
	}
}

// launchJob runs a job in the background under ctx, the runner's
// lifetime context: it ends with the runner (shutdown, lease lost) or
// when the job is abandoned at its bin. A job that ends any other way
// than by delivering its result is logged and counted.
func (r *Runner) launchJob(ctx context.Context, pj *pendingJob) {
	job := pj.job
	job.learn = r.built.Options
	job.learn.Fixed = r.built.Fixed
	job.online = r.onlineOptions()
	job.tol = r.cfg.Resmooth.Tolerance
	if job.tol == 0 {
		job.tol = DefaultResmoothTolerance
	}
	if r.cfg.Model.Mean.FollowsLevel() {
		job.follow, job.base, job.scale = true, r.built.MeanBase(), r.built.MeanScale()
		job.signal = r.cfg.Model.Mean.SignalPower
	}
	if job.relearn {
		if err := r.setAnchor(job); err != nil {
			r.log.Warn().Err(err).Msg("re-learn anchor not built; this re-smooth does not re-learn")
			job.relearn = false
		}
	}
	jctx, cancel := context.WithCancel(ctx)
	r.cancelJob = cancel
	r.job = pj
	pj.launched = true
	r.dirty = true
	r.publishView(nil)
	r.log.Debug().Int("bins", len(job.bins)).Int64("apply_at", pj.applyAt).Msg("re-smooth started")
	pause := r.faults.ResmoothPause
	log, outcomes := r.log, r.met.parent.resmoothOut.MustCurryWith(map[string]string{"model": r.cfg.Name})
	go func() {
		if pause > 0 {
			select {
			case <-time.After(pause):
			case <-jctx.Done():
			}
		}
		res := runResmooth(jctx, job)
		select {
		case r.results <- res:
		case <-jctx.Done():
			if !pj.abandoned.Load() {
				outcomes.WithLabelValues("cancelled").Inc()
				log.Info().Int64("apply_at", pj.applyAt).Msg("re-smooth cancelled: the runner stopped; its snapshot holds the job, which a restart resumes")
			}
		}
	}()
}

// finishJob takes a finished re-smooth: its smoothed revisions are
// published now (they depend only on its inputs); its state waits for
// its bin. They are the job's own: its smoothed moments with its
// likelihood (res.lik, re-learned or not) for pred_var and the realised
// demand, though the runner's own stays in use until the swap.
func (r *Runner) finishJob(res *resmoothResult) {
	pj := r.job
	if pj == nil || pj.job != res.job {
		return
	}
	pj.res = res
	r.met.resmooth.Observe(res.duration.Seconds())
	r.publishView(nil)
	if res.err != nil {
		return
	}
	for i, jb := range res.job.bins {
		msg := wire.LatentMessage{Schema: wire.SchemaVersion, Model: r.cfg.Name, Kind: wire.KindSmoothed, Revision: pj.revision, ModelDigest: r.digestID(),
			BinStart: jb.Start.UTC(), BinEnd: jb.Start.Add(r.cfg.Bin.Duration).UTC(),
			Estimates: r.estimatesWith(res.cells, res.lik, jb.T, res.mean[i], res.vars[i], jb.Obs)}
		r.publish(msg.MsgID(), wire.MarshalLatent(&msg), nil)
	}
	r.log.Debug().Int("bins", len(res.job.bins)).Int("revision", pj.revision).Int("cvi_steps", res.steps).Dur("took", res.duration).Msg("re-smoothed")
}

// awaitJob waits for the pending re-smooth to finish, at most
// resmooth.max_wait, after which it is abandoned (r.job nil); false if
// ctx ended first.
func (r *Runner) awaitJob(ctx context.Context) bool {
	if r.job.res != nil {
		return true
	}
	r.resumeJob(ctx)
	r.met.resmoothWaits.Inc()
	wait := r.cfg.Resmooth.MaxWait.Duration
	if wait == 0 {
		wait = 5 * time.Minute
	}
	began := time.Now()
	limit := time.NewTimer(wait)
	defer limit.Stop()
	// A long wait is logged as it goes, not only when it ends.
	note := time.NewTicker(min(wait/4, 30*time.Second))
	defer note.Stop()
	for r.job.res == nil {
		select {
		case res := <-r.results:
			r.finishJob(res)
		case <-note.C:
			r.log.Warn().Int64("apply_at", r.job.applyAt).Dur("waited", time.Since(began).Round(time.Millisecond)).Dur("max_wait", wait).
				Msg("ingest waiting for the re-smooth due at this bin")
		case <-limit.C:
			r.log.Error().Dur("max_wait", wait).Msg("re-smooth abandoned: still running at its bin; the online path goes on with its own state")
			r.met.parent.resmoothOut.WithLabelValues(r.cfg.Name, "abandoned").Inc()
			r.job.abandoned.Store(true)
			if r.cancelJob != nil {
				r.cancelJob()
			}
			r.job, r.cancelJob = nil, nil
			r.publishView(nil)
			return true
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// runResmooth re-converges CVI over the window (from its start state),
// optionally re-learns the hyperparameters on it, and re-filters to its
// last bin. It touches nothing the runner owns.
func runResmooth(ctx context.Context, job *resmoothJob) *resmoothResult {
	began := time.Now()
	res := &resmoothResult{job: job, model: job.model, lik: job.lik, cells: job.cells}
	res.err = resmooth(ctx, job, res)
	res.duration = time.Since(began)
	return res
}

// resmooth runs the steps of runResmooth, filling res.
func resmooth(ctx context.Context, job *resmoothJob, res *resmoothResult) error {
	data := job.cells.PrepareData(windowData(job.bins, job.model.NumProducts()))
	if !anyObserved(data) {
		return errors.New("no observation in the window")
	}
	if job.relearn {
		if err := relearn(ctx, job, data, res); err != nil {
			return err
		}
	}
	start := job.start
	if res.swapped {
		start = nil // the window stands alone under new hyperparameters
	}
	m := res.model
	if start != nil {
		var err error
		if m, err = m.WithStart(start.Time, *start); err != nil {
			return fmt.Errorf("window start: %w", err)
		}
	}
	e, err := cvi.NewEngine(m, res.lik, data)
	if err != nil {
		return err
	}
	warmStart(e, job.bins)
	if res.steps, res.elbo, err = e.Converge(1, job.tol, resmoothMaxSteps); err != nil {
		return fmt.Errorf("CVI: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := smoothed(e, len(job.bins), res); err != nil {
		return err
	}
	if job.follow {
		if start, err = followLevel(job, m, start, e, res); err != nil {
			return fmt.Errorf("prior mean level: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return refilter(job, start, res)
}

// windowData lays the window's bins out as a data set.
func windowData(bins []windowBin, np int) *cvi.Data {
	data := &cvi.Data{NP: np, Times: make([]float64, len(bins)), Obs: make([]cvi.Obs, 0, len(bins)*np)}
	for i, b := range bins {
		data.Times[i] = b.T
		data.Obs = append(data.Obs, b.Obs...)
	}
	return data
}

// smoothed stores the converged engine's smoothed marginals and sites per
// window bin (zero sites for bins with no observation).
func smoothed(e *cvi.Engine, nbins int, res *resmoothResult) error {
	np := e.Model().NumProducts()
	var post filter.Posterior
	if err := e.PredictAll(&post); err != nil {
		return err
	}
	if !allFinite(post.Mean) || !allFinite(post.Var) {
		return errors.New("smoothed posterior is not finite")
	}
	res.nat1, res.nat2 = make([][]float64, nbins), make([][]float64, nbins)
	res.mean, res.vars = make([][]float64, nbins), make([][]float64, nbins)
	for i := 0; i < nbins; i++ {
		res.mean[i] = post.Mean[i*np : (i+1)*np]
		res.vars[i] = post.Var[i*np : (i+1)*np]
	}
	idx := map[int]int{}
	for i, n := range e.Bins() {
		idx[n] = i
	}
	w := np
	if res.lik.Joint() {
		w = np * np
	}
	sites := e.Sites()
	for n := 0; n < nbins; n++ {
		res.nat1[n], res.nat2[n] = make([]float64, np), make([]float64, w)
		if i, ok := idx[n]; ok {
			l1, l2 := sites.Bin(i)
			copy(res.nat1[n], l1)
			copy(res.nat2[n], l2)
		}
	}
	return nil
}

// refilter runs the window's new sites through a filter from its start
// state to its last bin: the head the online path continues from.
func refilter(job *resmoothJob, start *filter.State, res *resmoothResult) error {
	on, err := cvi.NewOnline(res.model, res.lik, job.online)
	if err != nil {
		return err
	}
	if start != nil {
		if err := on.Filter().Restore(*start); err != nil {
			return err
		}
	}
	var br cvi.BinResult
	for n, b := range job.bins {
		if err := on.Apply(b.T, res.nat1[n], res.nat2[n], &br); err != nil {
			return fmt.Errorf("re-filter: %w", err)
		}
	}
	res.head = on.Filter().Save()
	return nil
}

// warmStart copies the window's sites into an engine over its bins.
func warmStart(e *cvi.Engine, bins []windowBin) {
	sites := e.Sites()
	for i, n := range e.Bins() {
		l1, l2 := sites.Bin(i)
		if len(bins[n].Nat1) == len(l1) && len(bins[n].Nat2) == len(l2) {
			copy(l1, bins[n].Nat1)
			copy(l2, bins[n].Nat2)
		}
	}
	_ = e.SetSites(sites) // the engine's own shape: cannot fail
}

// applyResmooth swaps the finished pending re-smooth in: new sites for
// its bins, the filter head re-filtered through them (and through the
// bins that closed meanwhile), new hyperparameters if they were accepted.
// A snapshot follows.
func (r *Runner) applyResmooth() {
	pj := r.job
	res := pj.res
	r.job, r.cancelJob = nil, nil
	r.snapDue = true
	outcome := "swapped"
	defer func() {
		r.met.parent.resmoothOut.WithLabelValues(r.cfg.Name, outcome).Inc()
		r.publishView(nil)
	}()
	if res.err != nil {
		outcome = "failed"
		r.log.Warn().Err(res.err).Msg("re-smooth failed; online state kept")
		return
	}
	if res.job.relearn && !res.swapped {
		outcome = "kept_hyperparameters"
		r.log.Warn().Str("reason", res.kept).Msg("re-learned hyperparameters not swapped in; keeping the old ones")
	}
	opts := res.job.online
	on, err := cvi.NewOnline(res.model, res.lik, opts)
	if err == nil {
		err = on.Filter().Restore(res.head)
	}
	if err != nil {
		outcome = "failed"
		r.log.Warn().Err(err).Msg("re-smooth result refused; online state kept")
		return
	}
	last := res.job.bins[len(res.job.bins)-1].Index
	for i, jb := range res.job.bins {
		if b := r.win.find(jb.Index); b != nil {
			b.Nat1, b.Nat2 = res.nat1[i], res.nat2[i]
		}
	}
	// Bins that closed while the re-smooth ran go through the new head
	// with the sites they got online.
	var br cvi.BinResult
	delta := make([]float64, len(r.prods.Names))
	moved := map[*windowBin][]float64{} // sites moved to the new level
	for i := 0; i < r.win.count; i++ {
		b := r.win.at(i)
		if b.Index <= last {
			continue
		}
		if b.Observed && len(b.Nat2) > 0 && anyNonZero(b.Nat2) {
			if res.scale != nil {
				// Its online site is of the demand less the old mean.
				meanShift(res.job.cells, res.cells, b.T, delta)
				nat1 := slices.Clone(b.Nat1)
				shiftSite(nat1, b.Nat2, delta)
				moved[b] = nat1
				err = on.Apply(b.T, nat1, b.Nat2, &br)
			} else {
				err = on.Apply(b.T, b.Nat1, b.Nat2, &br)
			}
		} else {
			err = on.Skip(b.T, &br)
		}
		if err != nil {
			outcome = "failed"
			r.log.Warn().Err(err).Msg("re-filter after re-smooth failed; online state kept")
			return
		}
	}
	if res.swapped || res.rescaled {
		r.built.Model, r.built.Lik = res.model, res.lik
		if res.swapped {
			r.log.Info().Float64("elbo", res.elbo).Msg("re-learned hyperparameters swapped in")
		}
		r.on = on
		tail, err := cvi.NewOnline(res.model, res.lik, opts)
		if err == nil {
			r.tail = tail
		}
	} else {
		r.on = on
	}
	for b, nat1 := range moved {
		b.Nat1 = nat1
	}
	if res.scale != nil {
		r.built.SetMeanScale(res.scale)
		r.log.Debug().Floats64("level", res.scale).Msg("prior mean level re-estimated")
	}
	r.revision = pj.revision
	r.lastResmooth = time.Now()
	r.log.Debug().Int64("apply_at", pj.applyAt).Int("revision", pj.revision).Msg("re-smooth swapped in")
}

func anyObserved(d *cvi.Data) bool {
	for i := range d.Obs {
		if d.Observed(i) {
			return true
		}
	}
	return false
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
