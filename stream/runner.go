package stream

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/ratelimit"
	"github.com/dcgpd/dcgpd/snapshot"
	"github.com/dcgpd/dcgpd/stream/csvio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// Sink is where a model's outputs go: the NATS connection in the daemon,
// an in-memory recorder in tests.
type Sink interface {
	// Publish sends one message with a de-duplication id; done runs once
	// the server has stored it (err nil) or could not (then the inputs it
	// covers stay unacknowledged and are redelivered).
	Publish(subject, msgID string, data []byte, done func(error))
	// Latest records a model's newest filtered message for readers of
	// "now" (the key-value bucket).
	Latest(model string, data []byte)
	// Reject reports a refused input on the model's rejected subject.
	Reject(model string, data []byte)
}

// input is one decoded message for a model with its input stream
// sequence (0: not from a stream) and acknowledgement handle.
type input struct {
	msg *wire.ObsMessage
	seq uint64
	ack Acker
	at  time.Time
}

// Runner owns one model: a single goroutine (Run) assembles its bins,
// runs the online step as each closes, publishes, hands the window to a
// background re-smooth, snapshots its state and acknowledges input once
// it is recoverable. Everything it holds is touched only by that
// goroutine, except the read view, which is swapped atomically, and the
// count of stored outputs.
type Runner struct {
	cfg     config.ModelConfig
	prefix  string
	prods   *csvio.Products
	built   *spec.Built
	on      *cvi.Online
	tail    *cvi.Online // the bins evicted from the window: its start state
	asm     *Assembler
	win     *window
	sink    Sink
	log     zerolog.Logger
	met     *modelMetrics
	in      *inbox
	batch   []input // the batch being handled; the inbox's spare after
	results chan *resmoothResult
	view    atomic.Pointer[View]

	revision      int
	processed     int64
	sinceResmooth int
	lastResmooth  time.Time
	job           *pendingJob
	cancelJob     context.CancelFunc
	faults        config.Faults

	// Input position and acknowledgements (acks.go); stream is the input
	// stream's creation time (Unix ns) the sequences count in.
	applied    uint64
	stream     int64
	acks       ackQueue
	maxPending int
	// snapAt is how many unacknowledged messages trigger a snapshot.
	snapAt    int
	published int64
	confirmed atomic.Int64
	confirmCh chan struct{}

	// Snapshots (snapshots.go); store nil: off.
	store snapshot.Store
	// digest is the configured model's digest (modelDigest), set by
	// NewRunner before anything moves the hyperparameters.
	digest      []byte
	snapEvery   time.Duration
	lastSnap    time.Time
	snapApplied uint64
	lastAttempt time.Time
	dirty       bool
	snapDue     bool
	// aborted: shutdown interrupted a message half-way, so the state is
	// not written (the last snapshot and a replay cover it).
	aborted bool

	// latest is the newest filtered output not yet written to the
	// key-value bucket (written once the input queue is drained).
	latest []byte

	res        cvi.BinResult
	shifted    []cvi.Obs // a bin's observations as the likelihood sees them (spec.Boundary)
	fm, fv, fc []float64
	closed     []ClosedBin
	logLimit   *ratelimit.Limiter
	// hook is told of each closed bin (binhook.go); nil: none.
	hook BinHook
}

// NewRunner builds a model's runner from its configuration.
func NewRunner(c *config.Config, m config.ModelConfig, sink Sink, log zerolog.Logger, met *Metrics) (*Runner, error) {
	if err := m.ModelLoaded(); err != nil {
		return nil, err
	}
	prods, err := loadProducts(c, &m)
	if err != nil {
		return nil, err
	}
	built, err := buildModel(prods, &m)
	if err != nil {
		if m.ModelFile != "" {
			return nil, spec.InFile(c.Path(m.ModelFile), err)
		}
		return nil, err
	}
	r := &Runner{cfg: m, prefix: c.NATS.Prefix, prods: prods, built: built, sink: sink,
		log: log.With().Str("model", m.Name).Logger(), met: met.forModel(m.Name),
		in: newInbox(inboxSize), batch: make([]input, 0, inboxSize), results: make(chan *resmoothResult, 1),
		asm: NewAssembler(prods.Names, m), win: newWindow(m.Resmooth.Window), logLimit: met.rejectLog,
		faults: c.Faults, maxPending: c.NATS.MaxAckPending, snapAt: max(1, min(c.NATS.MaxAckPending/2, c.Snapshot.EveryMessages)), confirmCh: make(chan struct{}, 1),
		snapEvery: c.Snapshot.Interval.Duration}
	r.digest = modelDigest(&r.cfg.Model, r.built)
	if c.Snapshot.Dir != "off" {
		r.store = &snapshot.FileStore{Dir: c.Snapshot.Dir, PauseBeforeRename: c.Faults.SnapshotPause}
	}
	if err := r.resetFilters(); err != nil {
		return nil, err
	}
	np := len(prods.Names)
	// r.fc stays nil: the online path forecasts independent products one
	// by one and keeps its own scratch for coupled ones.
	r.fm, r.fv = make([]float64, np), make([]float64, np)
	r.shifted = make([]cvi.Obs, np)
	r.publishView(nil)
	logPooling(r.log, built.Pooling, m.ModelFile)
	return r, nil
}

// resetFilters starts the online filter and the window-start filter at
// the prior of the current model.
func (r *Runner) resetFilters() error {
	var err error
	if r.on, err = cvi.NewOnline(r.built.Model, r.built.Lik, r.onlineOptions()); err != nil {
		return err
	}
	r.tail, err = cvi.NewOnline(r.built.Model, r.built.Lik, r.onlineOptions())
	return err
}

func (r *Runner) onlineOptions() cvi.OnlineOptions {
	opts := cvi.DefaultOnlineOptions()
	opts.Steps, opts.Damping = r.cfg.Online.Steps, r.cfg.Online.Damping
	return opts
}

// Name returns the model's name.
func (r *Runner) Name() string { return r.cfg.Name }

// Products returns the model's product names.
func (r *Runner) Products() []string { return r.prods.Names }

// View returns the latest read view; safe from any goroutine.
func (r *Runner) View() *View { return r.view.Load() }

// Applied returns the last input sequence in the model's state (after a
// restore: the snapshot's); the consumer resumes after it.
func (r *Runner) Applied() uint64 { return r.applied }

// Submit queues a decoded message with its input sequence for the runner;
// it blocks while the runner's queue is full (back-pressure on the
// consumer) or until ctx ends.
func (r *Runner) Submit(ctx context.Context, m *wire.ObsMessage, seq uint64, ack Acker) error {
	return r.in.put(ctx, input{msg: m, seq: seq, ack: ack, at: time.Now()})
}

// inboxSize bounds a model's queued input messages.
const inboxSize = 1024

// Run processes the model's input until ctx ends. Queued messages are
// left to the consumer's redelivery; a re-smooth restored from a
// snapshot is resumed under ctx at once, and one still running when ctx
// ends is cancelled (a snapshot holds its inputs); then the state is
// snapshotted and what it covers acknowledged.
func (r *Runner) Run(ctx context.Context) error {
	var tick, snapTick <-chan time.Time
	if iv := r.cfg.Resmooth.Interval.Duration; iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	}
	if r.store != nil {
		t := time.NewTicker(r.snapEvery)
		defer t.Stop()
		snapTick = t.C
	}
	ackTick := time.NewTicker(200 * time.Millisecond)
	defer ackTick.Stop()
	defer r.shutdown()
	// A re-smooth restored from a snapshot runs under this context.
	r.resumeJob(ctx)
	for !r.aborted {
		select {
		case <-ctx.Done():
			return nil
		case <-r.in.ready:
			r.handleBatch(ctx)
		case res := <-r.results:
			r.finishJob(res)
		case <-tick:
			if r.sinceResmooth > 0 {
				r.startResmooth(ctx, r.asm.next-1)
			}
		case <-snapTick:
			if r.dirty && time.Since(r.lastSnap) >= r.snapEvery/2 {
				r.writeSnapshot("interval")
			}
		case <-ackTick.C:
			r.flushAcks()
		}
	}
	return nil
}

// handleBatch handles every queued message, then writes the newest
// estimate to the key-value bucket. If ctx ends midway the rest is left
// to the consumer's redelivery.
func (r *Runner) handleBatch(ctx context.Context) {
	r.batch = r.in.take(r.batch)
	for _, in := range r.batch {
		if ctx.Err() != nil || r.aborted {
			return
		}
		r.handle(ctx, in)
	}
	r.flushLatest()
}

// shutdown cancels a running re-smooth, writes the final snapshot and
// acknowledges what is settled.
func (r *Runner) shutdown() {
	if r.cancelJob != nil {
		r.cancelJob()
	}
	r.flushLatest()
	if r.aborted {
		r.log.Info().Msg("shutdown interrupted a message; the last snapshot and the stream cover it")
		return
	}
	if r.store != nil && r.dirty {
		r.writeSnapshot("shutdown")
		return
	}
	if r.waitStored(10 * time.Second) {
		r.flushAcks()
	}
}

// handle files one message and processes every bin it lets close.
func (r *Runner) handle(ctx context.Context, in input) {
	if in.seq != 0 {
		if in.seq <= r.applied {
			// Already in the state (a redelivery after a restart or an
			// acknowledgement lost in a crash).
			r.met.redelivered.Inc()
			return
		}
		r.applied = in.seq
		if in.ack != nil {
			r.acks.push(in.seq, in.ack)
		}
	}
	r.dirty = true
	if rej := in.msg.Rejected(); rej != nil {
		RejectInput(r.sink, r.met.parent, r.log, r.logLimit, r.cfg.Name, nil, rej)
		if r.store == nil {
			r.ackWhenStored(r.frontier(), r.published)
		}
		return
	}
	res := r.asm.Add(in.msg, in.seq, in.at)
	r.met.accepted.Add(float64(res.Accepted))
	r.met.duplicates.Add(float64(res.Duplicates))
	for _, rej := range res.Rejected {
		r.rejected(in.msg, rej)
	}
	for _, l := range res.Late {
		r.met.late.Inc()
		if b := r.win.find(l.Index); b != nil {
			b.Obs[l.Product] = l.Obs
			b.Observed = true
			if r.hook != nil {
				r.hook.Closing(r.cfg.Name, r.prods.Names[l.Product:l.Product+1], b.Obs[l.Product:l.Product+1], b.Start, b.Start.Add(r.cfg.Bin.Duration))
			}
		} else {
			r.rejected(in.msg, wire.Reject(wire.ReasonLate, "bin %s has left the re-smoothing window", r.asm.BinStart(l.Index).Format(time.RFC3339)))
		}
	}
	r.closed = r.asm.Ready(r.closed[:0])
	for i := range r.closed {
		if !r.process(ctx, &r.closed[i]) {
			r.aborted = true
			return
		}
	}
	r.met.openBins.Set(float64(r.asm.Open()))
	switch {
	case r.store == nil:
		r.ackWhenStored(r.frontier(), r.published)
	case r.snapDue, r.acks.len() >= r.snapAt:
		// After a failed write, retry at most once a second, not per message.
		if r.lastSnap.Before(r.lastAttempt) && time.Since(r.lastAttempt) < time.Second {
			return
		}
		r.writeSnapshot("due")
	}
}

// flushLatest writes the newest filtered output to the key-value bucket.
// While a backlog is processed only the last of a run of bins is
// written: the bucket keeps one value per model, so the ones before it
// would be overwritten unread.
func (r *Runner) flushLatest() {
	if r.latest != nil {
		r.sink.Latest(r.cfg.Name, r.latest)
		r.latest = nil
	}
}

// rejected counts, reports and (rate-limited) logs a refused input.
func (r *Runner) rejected(m *wire.ObsMessage, rej *wire.Rejection) {
	RejectInput(r.sink, r.met.parent, r.log, r.logLimit, r.cfg.Name, m, rej)
}

// process runs the online step for one closed bin and publishes it: this
// is where a bin becomes an estimate. A re-smooth due at this bin is
// swapped in first. It returns false if ctx ended while it waited for
// that re-smooth.
func (r *Runner) process(ctx context.Context, cb *ClosedBin) bool {
	if r.job != nil && cb.Index >= r.job.applyAt {
		if !r.awaitJob(ctx) {
			return false
		}
		if r.job != nil {
			r.applyResmooth()
		}
	}
	began := time.Now()
	if r.hook != nil && cb.Observed > 0 {
		r.hook.Closing(r.cfg.Name, r.prods.Names, cb.Obs, cb.Start, cb.Start.Add(r.cfg.Bin.Duration))
	}
	t := ModelTime(cb.Start.Unix())
	var err error
	if cb.Observed > 0 {
		// The window keeps the observations as received; the likelihood
		// sees them less the prior mean.
		copy(r.shifted, cb.Obs)
		r.built.Boundary().Prepare(t, r.shifted)
		err = r.on.Step(t, r.shifted, &r.res)
	} else {
		err = r.on.Skip(t, &r.res)
	}
	msg := wire.LatentMessage{Schema: wire.SchemaVersion, Model: r.cfg.Name, Kind: wire.KindFiltered,
		BinStart: cb.Start.UTC(), BinEnd: cb.Start.Add(r.cfg.Bin.Duration).UTC(), ModelDigest: r.digestID()}
	wb := windowBin{Index: cb.Index, Start: cb.Start, T: t, Obs: cb.Obs, Observed: cb.Observed > 0}
	if err != nil {
		msg.Missing = err.Error()
		r.met.parent.rejected.WithLabelValues(r.cfg.Name, wire.ReasonNumerics).Inc()
		r.log.Warn().Err(err).Time("bin_start", cb.Start).Msg("bin published as missing; filter state kept from before it")
		wb.Nat1, wb.Nat2 = make([]float64, len(r.res.Nat1)), make([]float64, len(r.res.Nat2))
	} else {
		if cb.Observed > 0 && !r.res.Converged {
			r.met.unconverged.Inc()
		}
		msg.Estimates = r.estimates(r.built.Lik, t, r.res.Mean, r.res.Var, cb.Obs)
		msg.Forecasts = r.forecasts(cb.Start)
		wb.Nat1 = append([]float64(nil), r.res.Nat1...)
		wb.Nat2 = append([]float64(nil), r.res.Nat2...)
	}
	r.met.binCompute.Observe(time.Since(began).Seconds())
	filled := false // this bin is the one that fills the window
	if r.keepsWindow() {
		filled = r.win.count == len(r.win.bins)-1
		if ev, ok := r.win.push(wb); ok {
			r.advanceTail(&ev)
		}
	}
	data := wire.MarshalLatent(&msg)
	received := cb.Received
	r.publish(msg.MsgID(), data, func() {
		if !received.IsZero() {
			r.met.parent.latency.Observe(time.Since(received).Seconds())
		}
	})
	r.latest = data
	r.processed++
	r.met.bins.Inc()
	r.met.lastBin.Set(float64(cb.Start.Unix()))
	r.publishView(&msg)
	if r.hook != nil {
		r.hook.Published(ctx, r.cfg.Name, r.prods.Names, &msg)
	}
	r.sinceResmooth++
	if filled && r.cfg.Resmooth.Relearn {
		return r.learnFullWindow(ctx, cb.Index)
	}
	if n := r.cfg.Resmooth.EveryBins; n > 0 && r.sinceResmooth >= n {
		r.startResmooth(ctx, cb.Index)
	}
	return true
}

// learnFullWindow starts the re-learn on the first full window at the bin
// that fills it, not at the next scheduled one: a daemon started without
// fitted hyperparameters gets learned ones as soon as there is a window to
// learn them on. A re-smooth still pending is swapped in first, here
// rather than at its own bin. The window fills at a fixed bin, once (a
// restored window is already full), so outputs stay a function of the
// input. It returns false if ctx ended while it waited.
func (r *Runner) learnFullWindow(ctx context.Context, index int64) bool {
	if r.job != nil {
		if !r.awaitJob(ctx) {
			return false
		}
		if r.job != nil {
			r.applyResmooth()
		}
	}
	r.startResmooth(ctx, index)
	return true
}

// publish sends one output; stored runs once the server has stored it.
// The sink retries until it is stored or the daemon stops, so outputs
// are counted as stored in the order they were published.
func (r *Runner) publish(id string, data []byte, stored func()) {
	r.published++
	r.sink.Publish(r.subject(), id, data, func(err error) {
		if err != nil {
			r.log.Error().Err(err).Str("id", id).Msg("output not stored; its input stays unacknowledged and is replayed after a restart")
			return
		}
		if stored != nil {
			stored()
		}
		r.confirmed.Add(1)
		select {
		case r.confirmCh <- struct{}{}:
		default:
		}
	})
}

// keepsWindow reports whether the model re-smooths (or keeps late data
// for a re-smooth), so that the window of recent bins is needed.
func (r *Runner) keepsWindow() bool {
	rs := r.cfg.Resmooth
	return rs.EveryBins > 0 || rs.Interval.Duration > 0
}

func (r *Runner) subject() string { return r.prefix + ".latent." + r.cfg.Name }

// estimates turns per-product moments of the latent f − m at model time t
// into published estimates of f: the prior mean m added back, pred_var
// with lik's noise at the cell's level. With the bin's observations (as
// received; nil for a forecast) they also carry the realised demand under
// lik. lik is the likelihood the moments were computed with: r.built.Lik
// for the online path, the re-smooth's own for its smoothed revisions (a
// re-learn moves it before the swap installs it).
func (r *Runner) estimates(lik cvi.Likelihood, t float64, mean, vars []float64, obs []cvi.Obs) []wire.Estimate {
	return r.estimatesWith(r.built.Boundary(), lik, t, mean, vars, obs)
}

// estimatesWith is estimates with the prior mean and levels cells the
// moments are relative to: the runner's, or a re-smooth's whose prior
// mean level moved (published before the swap installs it).
func (r *Runner) estimatesWith(cells spec.Boundary, lik cvi.Likelihood, t float64, mean, vars []float64, obs []cvi.Obs) []wire.Estimate {
	out := make([]wire.Estimate, len(mean))
	for k, name := range r.prods.Names {
		noise := cvi.NoiseVarianceAt(lik, cells.LevelAt(t, k))
		out[k] = wire.NewEstimate(name, mean[k]+cells.MeanAt(t, k), vars[k], noise)
		if obs != nil {
			out[k].Observed = !math.IsNaN(obs[k].Y)
			out[k].Censored = out[k].Observed && obs[k].Censored
		}
	}
	if obs != nil {
		r.realisedDemand(cells, lik, t, mean, vars, obs, out)
		r.turnedAway(lik, obs, out)
	}
	return out
}

// realisedDemand sets the estimates' demand and demand_var: lik's
// realised demand (cvi.RealisedDemand) on the observations
// as the likelihood sees them (less the prior mean, with their levels),
// the prior mean added back. A likelihood without it (the count ones), or
// a cell whose value is not finite, leaves the fields out: a NaN would
// make the whole message missing.
func (r *Runner) realisedDemand(cells spec.Boundary, lik cvi.Likelihood, t float64, mean, vars []float64, obs []cvi.Obs, out []wire.Estimate) {
	n := len(out)
	shifted := append([]cvi.Obs(nil), obs...)
	cells.Prepare(t, shifted)
	buf := make([]float64, 2*n)
	dm, dv := buf[:n], buf[n:]
	if err := cvi.RealisedDemand(lik, shifted, mean, vars, dm, dv); err != nil {
		if !errors.Is(err, cvi.ErrNoRealised) {
			r.log.Debug().Err(err).Msg("realised demand not published")
		}
		return
	}
	for k := range out {
		dm[k] += cells.MeanAt(t, k)
		if finite(dm[k]) && finite(dv[k]) {
			out[k].Demand, out[k].DemandVar = &dm[k], &dv[k]
		}
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// forecasts predicts the next Horizon bins from the filter head.
func (r *Runner) forecasts(start time.Time) []wire.Forecast {
	h := r.cfg.Horizon
	if h == 0 {
		return nil
	}
	w := r.cfg.Bin.Duration
	out := make([]wire.Forecast, 0, h)
	err := r.on.ForecastSteps(w.Hours(), h, r.fm, r.fv, r.fc, func(i int) {
		bs := start.Add(time.Duration(i) * w)
		out = append(out, wire.Forecast{Horizon: i, BinStart: bs.UTC(), BinEnd: bs.Add(w).UTC(), Estimates: r.estimates(r.built.Lik, ModelTime(bs.Unix()), r.fm, r.fv, nil)})
	})
	if err != nil {
		r.log.Warn().Err(err).Msg("forecast failed")
	}
	return out
}

// advanceTail moves the window's start state past a bin that left it.
func (r *Runner) advanceTail(b *windowBin) {
	var err error
	if b.Observed && anyNonZero(b.Nat2) {
		err = r.tail.Apply(b.T, b.Nat1, b.Nat2, &cvi.BinResult{})
	} else {
		err = r.tail.Skip(b.T, &cvi.BinResult{})
	}
	if err != nil {
		r.log.Warn().Err(err).Msg("window start state not advanced")
	}
}

func anyNonZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}

// View is a model's read-only state for queries: replaced, never
// modified, after every bin and re-smooth.
type View struct {
	Latest *wire.LatentMessage `json:"latest,omitempty"`
	Status Status              `json:"status"`
}

// Status describes a model for the status query.
type Status struct {
	Model        string           `json:"model"`
	Products     []string         `json:"products"`
	Parameters   []spec.Parameter `json:"parameters"`
	LastBin      *time.Time       `json:"last_bin,omitempty"`
	Bins         int64            `json:"bins_processed"`
	OpenBins     int              `json:"open_bins"`
	Revision     int              `json:"revision"`
	Resmoothing  bool             `json:"resmoothing"`
	LastResmooth *time.Time       `json:"last_resmooth,omitempty"`
	// LagSeconds is the wall-clock time since the end of the newest bin
	// processed, at the last bin or re-smooth: with live input, how far
	// the estimates trail real time; after a replay of old data, the
	// data's age.
	LagSeconds float64 `json:"lag_seconds"`
}

func (r *Runner) publishView(latest *wire.LatentMessage) {
	v := &View{Latest: latest}
	if latest == nil {
		if old := r.view.Load(); old != nil {
			v.Latest = old.Latest
		}
	}
	// A parameter is "learned" here only if this daemon re-learns it: the
	// model re-learns (resmooth.relearn, on a re-smoothing schedule) and
	// the parameter is not held fixed. [fit] learn is `dcgpd fit`'s.
	params := r.built.Parameters()
	rs := r.cfg.Resmooth
	relearns := rs.Relearn && (rs.EveryBins > 0 || rs.Interval.Duration > 0)
	for i := range params {
		params[i].Learned = relearns && !r.built.Fixed[params[i].Name]
	}
	v.Status = Status{Model: r.cfg.Name, Products: r.prods.Names, Parameters: params,
		Bins: r.processed, OpenBins: r.asm.Open(), Revision: r.revision, Resmoothing: r.job != nil && r.job.res == nil}
	if v.Latest != nil {
		lb := v.Latest.BinStart
		v.Status.LastBin = &lb
		v.Status.LagSeconds = time.Since(v.Latest.BinEnd).Seconds()
	}
	if !r.lastResmooth.IsZero() {
		lr := r.lastResmooth
		v.Status.LastResmooth = &lr
	}
	r.view.Store(v)
}
