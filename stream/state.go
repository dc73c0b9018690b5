package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/snapshot"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// snapshotOf captures the runner's state between two messages.
func (r *Runner) snapshotOf() *snapshot.Model {
	m := &snapshot.Model{Name: r.cfg.Name, Products: r.prods.Names, BinWidth: r.cfg.Bin.Duration,
		Origin: r.cfg.Origin.UnixNano(), Applied: r.applied, Stream: r.stream, Revision: int64(r.revision),
		Processed: r.processed, SinceResmooth: int64(r.sinceResmooth),
		ModelParams: r.built.Model.Params(nil), LikParams: r.built.Lik.Params(nil),
		Online: onlineToSnap(r.on.Save()), Tail: onlineToSnap(r.tail.Save()), MeanScale: r.built.MeanScale()}
	if !r.lastResmooth.IsZero() {
		m.LastResmooth = r.lastResmooth.UnixNano()
	}
	for i := 0; i < r.win.count; i++ {
		m.Window = append(m.Window, binToSnap(r.win.at(i)))
	}
	m.Assembler = r.asm.state()
	if pj := r.job; pj != nil {
		j := &snapshot.Job{ApplyAt: pj.applyAt, ModelParams: pj.modelParams, LikParams: pj.likParams, Relearn: pj.job.relearn}
		for i := range pj.job.bins {
			j.Bins = append(j.Bins, binToSnap(&pj.job.bins[i]))
		}
		if pj.job.start != nil {
			f := filterToSnap(*pj.job.start)
			j.Start = &f
		}
		m.Job = j
	}
	if v := r.view.Load(); v != nil && v.Latest != nil {
		m.Latest, _ = json.Marshal(v.Latest)
	}
	return m
}

// restoreFrom loads a snapshot into a runner that has processed nothing.
// It checks that the snapshot is of this model's bins and products first
// and changes nothing on error. A re-smooth pending in the snapshot is
// restored but not launched: Run resumes it under the runner's own
// context (resumeJob), since whatever context restores the state (a
// takeover's step) may end long before the job's bin.
func (r *Runner) restoreFrom(_ context.Context, m *snapshot.Model) error {
	switch {
	case m.BinWidth != r.cfg.Bin.Duration:
		return fmt.Errorf("%w: snapshot has bins of %v, the configuration %v (move the snapshot away to start the model afresh)", ErrSnapshotMismatch, m.BinWidth, r.cfg.Bin.Duration)
	case m.Origin != r.cfg.Origin.UnixNano():
		return fmt.Errorf("%w: snapshot has bin origin %s, the configuration %s", ErrSnapshotMismatch, time.Unix(0, m.Origin).UTC().Format(time.RFC3339), r.cfg.Origin.Format(time.RFC3339))
	case !slices.Equal(m.Products, r.prods.Names):
		return fmt.Errorf("%w: snapshot has products %v, the configuration %v", ErrSnapshotMismatch, m.Products, r.prods.Names)
	}
	model, lik, err := r.modelWith(m.ModelParams, m.LikParams)
	if err != nil {
		return err
	}
	on, err := cvi.NewOnline(model, lik, r.onlineOptions())
	if err != nil {
		return err
	}
	tail, err := cvi.NewOnline(model, lik, r.onlineOptions())
	if err != nil {
		return err
	}
	if err := on.Restore(onlineFromSnap(m.Online)); err != nil {
		return fmt.Errorf("%w: filter head: %v", ErrSnapshotMismatch, err)
	}
	if err := tail.Restore(onlineFromSnap(m.Tail)); err != nil {
		return fmt.Errorf("%w: window start: %v", ErrSnapshotMismatch, err)
	}
	if len(m.Window) > len(r.win.bins) {
		return fmt.Errorf("%w: snapshot window of %d bins exceeds resmooth.window %d", ErrSnapshotMismatch, len(m.Window), len(r.win.bins))
	}
	if m.MeanScale != nil && !r.cfg.Model.Mean.FollowsLevel() {
		return fmt.Errorf("%w: snapshot has a prior mean level, the configuration's model.mean.level is not \"scale\"", ErrSnapshotMismatch)
	}
	cells := r.built.Boundary()
	if m.MeanScale != nil {
		cells.Mean = r.built.MeanBase().Scaled(m.MeanScale)
	}
	var job *pendingJob
	if j := m.Job; j != nil {
		jm, jl, err := r.modelWith(j.ModelParams, j.LikParams)
		if err != nil {
			return fmt.Errorf("re-smooth job: %w", err)
		}
		rj := &resmoothJob{model: jm, lik: jl, relearn: j.Relearn, cells: cells}
		for _, b := range j.Bins {
			rj.bins = append(rj.bins, binFromSnap(b))
		}
		if j.Start != nil {
			s := filterFromSnap(*j.Start)
			rj.start = &s
		}
		job = &pendingJob{job: rj, applyAt: j.ApplyAt, revision: int(m.Revision) + 1, modelParams: j.ModelParams, likParams: j.LikParams}
	}
	var latest *wire.LatentMessage
	if len(m.Latest) > 0 {
		latest = new(wire.LatentMessage)
		if err := json.Unmarshal(m.Latest, latest); err != nil {
			return fmt.Errorf("%w: latest estimate: %v", snapshot.ErrCorrupt, err)
		}
	}
	// Nothing can fail from here on.
	r.built.Model, r.built.Lik = model, lik
	if m.MeanScale != nil {
		r.built.SetMeanScale(m.MeanScale)
	}
	r.on, r.tail = on, tail
	r.win = newWindow(len(r.win.bins))
	for _, b := range m.Window {
		r.win.push(binFromSnap(b))
	}
	r.asm.restore(m.Assembler)
	r.applied, r.snapApplied, r.stream = m.Applied, m.Applied, m.Stream
	r.revision, r.processed, r.sinceResmooth = int(m.Revision), m.Processed, int(m.SinceResmooth)
	if m.LastResmooth != 0 {
		r.lastResmooth = time.Unix(0, m.LastResmooth)
	}
	r.job, r.cancelJob = job, nil
	r.dirty = false
	r.publishView(latest)
	return nil
}

// modelWith builds the model from its configuration with the given raw
// hyperparameters.
func (r *Runner) modelWith(mp, lp []float64) (*filter.Model, cvi.Likelihood, error) {
	b, err := buildModel(r.prods, &r.cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := b.Model.SetParams(mp); err != nil {
		return nil, nil, fmt.Errorf("%w: model hyperparameters: %v", ErrSnapshotMismatch, err)
	}
	if err := b.Lik.SetParams(lp); err != nil {
		return nil, nil, fmt.Errorf("%w: likelihood hyperparameters: %v", ErrSnapshotMismatch, err)
	}
	return b.Model, b.Lik, nil
}

// state returns the assembler's clock and open bins for a snapshot.
func (a *Assembler) state() snapshot.Assembler {
	s := snapshot.Assembler{Started: a.started, Next: a.next, ClockSet: !a.clock.IsZero()}
	if s.ClockSet {
		s.Clock = a.clock.UnixNano()
	}
	idx := make([]int64, 0, len(a.open))
	for i := range a.open {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		b := a.open[i]
		ob := snapshot.OpenBin{Index: i, Obs: obsToSnap(b.obs), Have: slices.Clone(b.have), MinSeq: b.minSeq}
		if !b.received.IsZero() {
			ob.Received = b.received.UnixNano()
		}
		s.Open = append(s.Open, ob)
	}
	return s
}

// restore replaces the assembler's state by a snapshot's.
func (a *Assembler) restore(s snapshot.Assembler) {
	a.started, a.next = s.Started, s.Next
	a.clock = time.Time{}
	if s.ClockSet {
		a.clock = time.Unix(0, s.Clock).UTC()
	}
	a.open = map[int64]*openBin{}
	for _, ob := range s.Open {
		b := &openBin{obs: obsFromSnap(ob.Obs), have: slices.Clone(ob.Have), minSeq: ob.MinSeq}
		for _, h := range b.have {
			if h {
				b.n++
			}
		}
		if ob.Received != 0 {
			b.received = time.Unix(0, ob.Received)
		}
		a.open[ob.Index] = b
	}
}

func filterToSnap(s filter.State) snapshot.Filter {
	return snapshot.Filter{Started: s.Started, Time: s.Time, LogLik: s.LogLik, Mean: s.Mean, Cov: s.Cov}
}

func filterFromSnap(s snapshot.Filter) filter.State {
	return filter.State{Started: s.Started, Time: s.Time, LogLik: s.LogLik, Mean: s.Mean, Cov: s.Cov}
}

func onlineToSnap(s cvi.OnlineState) snapshot.Online {
	return snapshot.Online{Filter: filterToSnap(s.Filter), Warm: s.Warm, Nat1: s.Nat1, Nat2: s.Nat2, PrevObserved: s.PrevObserved}
}

func onlineFromSnap(s snapshot.Online) cvi.OnlineState {
	return cvi.OnlineState{Filter: filterFromSnap(s.Filter), Warm: s.Warm, Nat1: s.Nat1, Nat2: s.Nat2, PrevObserved: s.PrevObserved}
}

func obsToSnap(obs []cvi.Obs) []snapshot.Obs {
	out := make([]snapshot.Obs, len(obs))
	for i, o := range obs {
		out[i] = snapshot.Obs{Y: o.Y, Supply: o.Supply, Censored: o.Censored}
	}
	return out
}

func obsFromSnap(obs []snapshot.Obs) []cvi.Obs {
	out := make([]cvi.Obs, len(obs))
	for i, o := range obs {
		out[i] = cvi.Obs{Y: o.Y, Supply: o.Supply, Censored: o.Censored}
	}
	return out
}

func binToSnap(b *windowBin) snapshot.Bin {
	return snapshot.Bin{Index: b.Index, Start: b.Start.UnixNano(), T: b.T, Obs: obsToSnap(b.Obs),
		Nat1: slices.Clone(b.Nat1), Nat2: slices.Clone(b.Nat2), Observed: b.Observed}
}

func binFromSnap(b snapshot.Bin) windowBin {
	return windowBin{Index: b.Index, Start: time.Unix(0, b.Start).UTC(), T: b.T, Obs: obsFromSnap(b.Obs),
		Nat1: b.Nat1, Nat2: b.Nat2, Observed: b.Observed}
}
