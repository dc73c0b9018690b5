// Package demo runs dcgpd's demonstration: the daemon, in process on an
// embedded NATS server, fed a simulated bike-share cluster whose true
// demand is known, scored against it beside batch CGP and DCGP fits, and
// plotted.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/daemon"
	"github.com/dcgpd/dcgpd/filter"
	"github.com/dcgpd/dcgpd/internal/app/synth"
	"github.com/dcgpd/dcgpd/stream/csvio"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// demoModel is the demo daemon's model name; demoOrigin is the simulated
// cluster's hour 0 (a Monday, as in the simulator).
const demoModel = "cluster"

// dayBins is the demo's replay step and re-smooth period: a day of hours.
const dayBins = 24

var demoOrigin = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// demoKernels are the demo's temporal kernel settings, shared by the
// batch fits and the daemon: a Matérn-3/2 trend and a daily cycle.
func demoKernels(variance float64) []spec.Temporal {
	return []spec.Temporal{
		{Kernel: "matern32", Lengthscale: 24, Variance: variance},
		{Kernel: "periodic", Period: 24, Harmonics: 4, Lengthscale: 1, Variance: variance},
	}
}

// demoDiffusion is the diffusion graph of the demo (metres, as the
// simulated hubs' features).
var demoDiffusion = spec.Diffusion{Lengthscale: 250, Sink: 0.2}

// Options configure a demo run (the flags of `dcgpd demo`).
type Options struct {
	// Out is the directory the plot dcgpd-demo.svg is written to.
	Out string
	// Seed, Hubs and Days define the simulated cluster.
	Seed       uint64
	Hubs, Days int
	// Speed is bins replayed per second within each day (0: as fast as the
	// daemon takes them).
	Speed float64
	// Relearn re-learns the hyperparameters at every re-smooth.
	Relearn bool
}

// ErrOptions reports options the demo cannot run with.
var ErrOptions = errors.New("demo needs at least 2 hubs and 2 days")

// Run runs the daemon on a simulated bike-share cluster whose true demand
// is known: an embedded NATS server, the daemon in process, the cluster's
// hours replayed through NATS, the filtered and smoothed estimates
// collected from the latent subject; then it compares them, and batch
// fits of the same data, with the true demand, prints the table to stdout
// and plots three stations.
func Run(ctx context.Context, opt Options, stdout io.Writer, log zerolog.Logger) error {
	if opt.Hubs < 2 || opt.Days < 2 {
		return ErrOptions
	}
	began := time.Now()
	cc := synth.DefaultClusterConfig()
	cc.Hubs, cc.Days = opt.Hubs, opt.Days
	ds, err := synth.Cluster(opt.Seed, cc)
	if err != nil {
		return err
	}
	data, rows := demoData(ds)
	np := len(ds.Products)
	fmt.Fprintf(stdout, "simulated %d hubs × %d days (seed %d); censored fraction per hub: %s\n", np, opt.Days, opt.Seed, fmtFracs(ds.Train.CensoredFraction()))

	// The daemon's view of the cluster, through NATS.
	run, err := demoDaemon(ctx, ds, rows, opt.Speed, opt.Relearn, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "daemon: %d bins replayed through embedded NATS in %.1fs, %d filtered and %d smoothed messages (%d re-smooth revisions)\n",
		len(rows), run.elapsed.Seconds(), run.nFiltered, run.nSmoothed, run.revisions)

	// Batch fits of the same grid, as `dcgpd fit` would.
	prods := &csvio.Products{Names: ds.Products, Features: ds.Features}
	sp := spec.Spec{Model: spec.Model{Temporal: demoKernels(0), Diffusion: demoDiffusion}}
	batch := map[string]*fitResult{}
	for _, lik := range []string{"tobit", "diffusion"} {
		res, err := fitGrid(ctx, data, prods, sp, lik)
		if err != nil {
			return fmt.Errorf("batch %s fit: %w", lik, err)
		}
		batch[lik] = res
	}
	best := demoReport(stdout, rows, np, run, batch)

	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(opt.Out, "dcgpd-demo.svg")
	if err := demoPlot(path, ds, rows, best, 3); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	fmt.Fprintf(stdout, "\nwrote %s (%.1fs in all)\n", path, time.Since(began).Seconds())
	return nil
}

// fitResult is a batch fit's posterior over the data grid.
type fitResult struct {
	post filter.Posterior
}

// fitGrid fits the configured model to data as `dcgpd fit` does (staged
// for the diffusion likelihood), without its progress lines.
func fitGrid(ctx context.Context, data *cvi.Data, prods *csvio.Products, sp spec.Spec, lik string) (*fitResult, error) {
	sum := spec.Summarise(data, prods.Features, prods.Geographic)
	sum.Names = prods.Names
	f, err := sp.Learn(ctx, data, sum, lik, nil)
	if err != nil {
		return nil, err
	}
	r := &fitResult{}
	if err := f.Engine.PredictAll(&r.post); err != nil {
		return nil, err
	}
	return r, nil
}

// demoReport prints the scores of the daemon's filtered and smoothed
// estimates and of the batch fits against the true demand, and returns the
// daemon's final answer per bin: its latest smoothed revision, or the
// filtered estimate for a bin no re-smooth covered.
func demoReport(stdout io.Writer, rows []demoRow, np int, run *demoResult, batch map[string]*fitResult) []*wire.LatentMessage {
	// The daemon's final answer per bin is its latest smoothed revision,
	// or the filtered estimate for a bin no re-smooth covered.
	filtered := make([][]float64, len(rows))
	smoothed := make([][]float64, len(rows))
	best := make([]*wire.LatentMessage, len(rows))
	covered := 0
	for b := range rows {
		best[b] = run.filtered[b]
		if m := run.smoothed[b]; m != nil && len(m.Estimates) > 0 {
			best[b] = m
			covered++
		}
		if run.filtered[b] != nil {
			filtered[b] = means(run.filtered[b])
		}
		if best[b] != nil {
			smoothed[b] = means(best[b])
		}
	}
	grid := func(res *fitResult) [][]float64 {
		g := make([][]float64, len(rows))
		for b := range rows {
			g[b] = res.post.Mean[b*np : (b+1)*np]
		}
		return g
	}
	type line struct {
		name string
		est  [][]float64
	}
	lines := []line{
		{"online filtered", filtered},
		{"re-smoothed", smoothed},
		{"batch CGP", grid(batch["tobit"])},
		{"batch DCGP", grid(batch["diffusion"])},
	}
	nObs, nCens := 0, 0
	for _, r := range rows {
		if !r.train {
			continue
		}
		for k := 0; k < np; k++ {
			nObs++
			if r.split.Saturated[r.i][k] {
				nCens++
			}
		}
	}
	fmt.Fprintf(stdout, "%d bins, %d observations (%d held-out hours without demand), %.1f%% censored\n",
		len(rows), nObs, len(rows)*np-nObs, 100*float64(nCens)/float64(max(nObs, 1)))
	fmt.Fprintf(stdout, "re-smoothed estimates cover %d of %d bins (the rest keep their filtered estimate)\n", covered, len(rows))
	fmt.Fprintf(stdout, "\n%-16s %14s %14s %14s\n", "RMSE vs truth", "observed hours", "held-out hours", "unmet demand")
	for _, l := range lines {
		tr, te := demoScore(l.est, rows, np)
		fmt.Fprintf(stdout, "%-16s %14.3f %14.3f %14.0f\n", l.name, tr, te, unmetDemand(l.est, rows, np))
	}
	fmt.Fprintf(stdout, "%-16s %14s %14s %14.0f\n", "true", "", "", unmetDemand(nil, rows, np))
	fmt.Fprintln(stdout, "(unmet demand: Σ max(latent mean − observed demand, 0) over the censored observed hours)")
	return best
}

// demoResult is what the demo collected from the daemon, per data bin.
type demoResult struct {
	filtered, smoothed   []*wire.LatentMessage
	nFiltered, nSmoothed int
	revisions            int
	elapsed              time.Duration
}

// demoDaemon starts the daemon with an embedded NATS server on a free
// loopback port, replays the cluster through it, collects what it
// publishes until the last bin has a smoothed revision, and stops it.
func demoDaemon(ctx context.Context, ds *synth.Dataset, rows []demoRow, speed float64, relearn bool, log zerolog.Logger) (*demoResult, error) {
	began := time.Now()
	tmp, err := os.MkdirTemp("", "dcgpd-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cfg := config.DefaultConfig()
	cfg.NATS.Listen = "127.0.0.1:-1"
	cfg.NATS.StoreDir = filepath.Join(tmp, "jetstream")
	cfg.Snapshot.Dir = filepath.Join(tmp, "snapshots")
	cfg.HTTP.Listen = "off"
	cfg.Models = []config.ModelConfig{demoModelConfig(ds, rows, relearn)}
	rd, err := startDaemon(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer rd.shutdown()
	nc, err := nats.Connect(rd.d.NATSURL(), nats.Name("dcgpd demo"))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	col := newDemoCollector(ds, rows)
	sub, err := nc.Subscribe("dcgp.latent."+demoModel, col.receive)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if err := rd.replayDays(ctx, js, col, speed); err != nil {
		return nil, err
	}
	if err := sub.Unsubscribe(); err != nil {
		return nil, err
	}
	if err := rd.shutdown(); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	col.res.elapsed = time.Since(began)
	return col.res, nil
}

// runningDaemon is a daemon running in process until shutdown.
type runningDaemon struct {
	d       *daemon.Daemon
	runErr  chan error
	stop    context.CancelFunc
	stopped bool
}

// startDaemon runs the daemon for cfg on its own goroutine and waits until
// it has started.
func startDaemon(ctx context.Context, cfg config.Config, log zerolog.Logger) (*runningDaemon, error) {
	d, err := daemon.New(cfg, log)
	if err != nil {
		return nil, err
	}
	dctx, stop := context.WithCancel(ctx)
	rd := &runningDaemon{d: d, runErr: make(chan error, 1), stop: stop}
	go func() { rd.runErr <- d.Run(dctx) }()
	select {
	case <-d.Started():
		return rd, nil
	case err := <-rd.runErr:
		stop()
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("daemon: %w", err)
	}
}

// shutdown stops the daemon and returns what Run returned (nil when it
// was already collected).
func (rd *runningDaemon) shutdown() error {
	rd.stop()
	if rd.stopped {
		return nil
	}
	rd.stopped = true
	return <-rd.runErr
}

// demoCollector gathers the daemon's latent messages per data bin.
type demoCollector struct {
	index map[int64]int // bin start (Unix s) → data bin
	bins  []natsio.ReplayBin
	mu    sync.Mutex
	res   *demoResult
	last  time.Time // when the last message arrived
}

// newDemoCollector prepares the cluster's bins for replay and their
// index for the messages that come back.
func newDemoCollector(ds *synth.Dataset, rows []demoRow) *demoCollector {
	c := &demoCollector{index: map[int64]int{}, bins: make([]natsio.ReplayBin, len(rows)), last: time.Now(),
		res: &demoResult{filtered: make([]*wire.LatentMessage, len(rows)), smoothed: make([]*wire.LatentMessage, len(rows))}}
	for b, r := range rows {
		start := demoOrigin.Add(time.Duration(r.split.Times[r.i] * float64(time.Hour)))
		c.index[start.Unix()] = b
		c.bins[b] = natsio.ReplayBin{Start: start, Observations: demoObservations(ds, r)}
	}
	return c
}

// receive keeps a latent message: every filtered one, and the newest
// smoothed revision per bin.
func (c *demoCollector) receive(m *nats.Msg) {
	var lm wire.LatentMessage
	if err := json.Unmarshal(m.Data, &lm); err != nil {
		return
	}
	b, ok := c.index[lm.BinStart.Unix()]
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	res := c.res
	c.last = time.Now()
	switch lm.Kind {
	case wire.KindFiltered:
		res.nFiltered++
		res.filtered[b] = &lm
	case wire.KindSmoothed:
		res.nSmoothed++
		if old := res.smoothed[b]; old == nil || lm.Revision > old.Revision {
			res.smoothed[b] = &lm
		}
		res.revisions = max(res.revisions, lm.Revision)
	}
}

// replayDays replays the bins a day at a time and waits for the day's
// filtered estimates and for the re-smooth its last bin starts: live, a
// day of hourly bins takes far longer than a re-smooth, so every bin gets
// smoothed revisions; replayed flat out, re-smooths would be skipped while
// one runs. The last day ends with a watermark.
func (rd *runningDaemon) replayDays(ctx context.Context, js jetstream.JetStream, col *demoCollector, speed float64) error {
	bins := col.bins
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for a := 0; a < len(bins); a += dayBins {
		b := min(a+dayBins, len(bins))
		opts := natsio.ReplayOptions{Speed: speed, Width: time.Hour, Watermark: b == len(bins)}
		if _, err := natsio.Replay(ctx, js, demoModel, bins[a:b], opts); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		for done := false; !done; {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-rd.runErr:
				rd.stopped = true
				return fmt.Errorf("daemon stopped: %v", err)
			case <-deadline:
				return fmt.Errorf("the daemon did not publish bins %d to %d within 60s", a, b-1)
			case <-tick.C:
				col.mu.Lock()
				done = col.res.nFiltered >= b && col.res.smoothed[b-1] != nil
				if b == len(bins) {
					// Let the last revisions arrive.
					done = done && time.Since(col.last) > 200*time.Millisecond && !rd.d.Runner(demoModel).View().Status.Resmoothing
				}
				col.mu.Unlock()
			}
		}
	}
	return nil
}

// demoModelConfig configures the daemon's model for the simulated
// cluster: the hubs as inline products (metres east/north), hourly bins,
// the diffusion likelihood with the batch demo's kernels, a re-smooth of
// the last 7 days every 24 bins (and after a quiet second), re-learning
// the hyperparameters only if asked. The daemon starts without data, so the
// starting variances come from the first day's observations as `fit`
// would take them from the whole file.
func demoModelConfig(ds *synth.Dataset, rows []demoRow, relearn bool) config.ModelConfig {
	m := config.DefaultModelConfig()
	m.Name = demoModel
	m.Bin = config.Duration{Duration: time.Hour}
	m.Origin = demoOrigin
	for k, p := range ds.Products {
		m.Product = append(m.Product, config.ProductConfig{Name: p, Features: ds.Features[k]})
	}
	m.Resmooth = config.ResmoothConfig{EveryBins: dayBins, Window: 7 * dayBins, Relearn: relearn, Interval: config.Duration{Duration: time.Second}}
	first := &cvi.Data{NP: len(ds.Products)}
	for _, r := range rows {
		if r.split.Times[r.i] >= 24 {
			break
		}
		first.Times = append(first.Times, r.split.Times[r.i])
		for k := range ds.Products {
			o := cvi.Obs{Y: math.NaN()}
			if r.train {
				o.Y = r.split.Obs[r.i][k]
			}
			first.Obs = append(first.Obs, o)
		}
	}
	v := spec.Summarise(first, nil, false).Variance
	m.Model = spec.Model{Likelihood: "diffusion", NoiseVariance: v / 10, Temporal: demoKernels(v / 2), Diffusion: demoDiffusion}
	return m
}

// demoObservations is one bin's input: every hub's demand (or none for a
// held-out hour), supply and censoring mark.
func demoObservations(ds *synth.Dataset, r demoRow) []wire.Observation {
	obs := make([]wire.Observation, len(ds.Products))
	for k, p := range ds.Products {
		o := wire.Observation{Product: p}
		if u := r.split.Supply[r.i][k]; !math.IsInf(u, 1) {
			o.Supply = &u
		}
		if r.train {
			y, c := r.split.Obs[r.i][k], r.split.Saturated[r.i][k] && o.Supply != nil
			o.Demand, o.Censored = &y, &c
		}
		obs[k] = o
	}
	return obs
}

func means(m *wire.LatentMessage) []float64 {
	if len(m.Estimates) == 0 {
		return nil
	}
	out := make([]float64, len(m.Estimates))
	for k, e := range m.Estimates {
		out[k] = e.Mean
	}
	return out
}

// demoScore is the RMSE of per-bin means (nil rows skipped) against the
// true demand over the observed and the held-out hours.
func demoScore(est [][]float64, rows []demoRow, np int) (observed, heldOut float64) {
	var s [2]float64
	var n [2]int
	for b, r := range rows {
		if est[b] == nil {
			continue
		}
		j := 1
		if r.train {
			j = 0
		}
		for k := 0; k < np; k++ {
			e := est[b][k] - r.split.TrueY[r.i][k]
			s[j] += e * e
			n[j]++
		}
	}
	return math.Sqrt(s[0] / float64(n[0])), math.Sqrt(s[1] / float64(n[1]))
}

// unmetDemand sums max(mean − observed, 0) over the censored observed
// cells; est nil uses the true demand.
func unmetDemand(est [][]float64, rows []demoRow, np int) float64 {
	var u float64
	for b, r := range rows {
		if !r.train {
			continue
		}
		for k := 0; k < np; k++ {
			if !r.split.Saturated[r.i][k] {
				continue
			}
			m := r.split.TrueY[r.i][k]
			if est != nil {
				if est[b] == nil {
					continue
				}
				m = est[b][k]
			}
			u += math.Max(m-r.split.Obs[r.i][k], 0)
		}
	}
	return u
}

func fmtFracs(f []float64) string {
	s := ""
	for i, v := range f {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2f", v)
	}
	return s
}

// demoRow locates a data bin in the dataset's splits.
type demoRow struct {
	split *synth.Split
	i     int
	train bool
}

// demoData merges the cluster's train and test hours into one grid; test
// hours are unobserved.
func demoData(ds *synth.Dataset) (*cvi.Data, []demoRow) {
	np := len(ds.Products)
	d := &cvi.Data{NP: np}
	var rows []demoRow
	a, b := 0, 0
	for a < len(ds.Train.Times) || b < len(ds.Test.Times) {
		var r demoRow
		if b >= len(ds.Test.Times) || (a < len(ds.Train.Times) && ds.Train.Times[a] < ds.Test.Times[b]) {
			r = demoRow{&ds.Train, a, true}
			a++
		} else {
			r = demoRow{&ds.Test, b, false}
			b++
		}
		d.Times = append(d.Times, r.split.Times[r.i])
		for k := 0; k < np; k++ {
			o := cvi.Obs{Y: math.NaN(), Supply: r.split.Supply[r.i][k]}
			if r.train {
				o.Y = r.split.Obs[r.i][k]
				o.Censored = r.split.Saturated[r.i][k]
			}
			d.Obs = append(d.Obs, o)
		}
		rows = append(rows, r)
	}
	return d, rows
}
