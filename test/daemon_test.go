package test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
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
	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/query"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// origin is the Monday 00:00 UTC the simulated clusters start at.
var origin = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// cluster is a simulated cluster laid out as the daemon sees it: every
// hour a bin, held-out hours present but unobserved.
type cluster struct {
	ds    *synth.Dataset
	data  *cvi.Data
	names []string
	feats [][]float64
	bins  []natsio.ReplayBin
}

func simulated(t testing.TB, hubs, days int) *cluster {
	t.Helper()
	cfg := synth.DefaultClusterConfig()
	cfg.Hubs, cfg.Days = hubs, days
	ds, err := synth.Cluster(7, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fromDataset(ds)
}

// fromDataset lays a data set's train and test hours out as hourly bins
// from origin (times in hours since the data set's start).
func fromDataset(ds *synth.Dataset) *cluster {
	c := &cluster{ds: ds, names: ds.Products, feats: ds.Features}
	np := len(ds.Products)
	c.data = &cvi.Data{NP: np}
	a, b := 0, 0
	for a < len(ds.Train.Times) || b < len(ds.Test.Times) {
		train := b >= len(ds.Test.Times) || (a < len(ds.Train.Times) && ds.Train.Times[a] < ds.Test.Times[b])
		sp, i := &ds.Test, b
		if train {
			sp, i = &ds.Train, a
			a++
		} else {
			b++
		}
		start := origin.Add(time.Duration(sp.Times[i] * float64(time.Hour)))
		c.data.Times = append(c.data.Times, stream.ModelTime(start.Unix()))
		rb := natsio.ReplayBin{Start: start}
		for k := 0; k < np; k++ {
			o := cvi.Obs{Y: math.NaN(), Supply: sp.Supply[i][k]}
			ob := wire.Observation{Product: ds.Products[k]}
			if !math.IsInf(o.Supply, 1) {
				u := o.Supply
				ob.Supply = &u
			}
			if train {
				o.Y, o.Censored = sp.Obs[i][k], sp.Saturated[i][k]
				y, cen := o.Y, o.Censored
				ob.Demand, ob.Censored = &y, &cen
			}
			c.data.Obs = append(c.data.Obs, o)
			rb.Observations = append(rb.Observations, ob)
		}
		c.bins = append(c.bins, rb)
	}
	return c
}

// truth returns the true demand of every bin and product (train and
// held-out hours alike).
func (c *cluster) truth() []float64 {
	np := len(c.names)
	out := make([]float64, 0, len(c.bins)*np)
	a, b := 0, 0
	ds := c.ds
	for a < len(ds.Train.Times) || b < len(ds.Test.Times) {
		if b >= len(ds.Test.Times) || (a < len(ds.Train.Times) && ds.Train.Times[a] < ds.Test.Times[b]) {
			out = append(out, ds.Train.TrueY[a]...)
			a++
		} else {
			out = append(out, ds.Test.TrueY[b]...)
			b++
		}
	}
	return out
}

// modelSpec is the model every daemon test runs: all hyperparameters
// given, so `fit` builds exactly the same model from the same table.
func modelSpec() spec.Spec {
	return spec.Spec{Model: spec.Model{Likelihood: "diffusion", NoiseVariance: 1.5,
		Temporal: []spec.Temporal{
			{Kernel: "matern32", Variance: 6, Lengthscale: 24},
			{Kernel: "periodic", Variance: 4, Period: 24, Harmonics: 4, Lengthscale: 1},
		},
		Diffusion: spec.Diffusion{Lengthscale: 250, Sink: 0.2}}}
}

func daemonConfig(t testing.TB, c *cluster, models int) config.Config {
	cfg := config.DefaultConfig()
	cfg.NATS.Listen = "127.0.0.1:-1"
	cfg.NATS.StoreDir = filepath.Join(t.TempDir(), "js")
	cfg.Snapshot.Dir = filepath.Join(t.TempDir(), "snapshots")
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Log.Level = "warn"
	for i := 0; i < models; i++ {
		m := config.DefaultModelConfig()
		m.Name = "cluster" + strconv.Itoa(i)
		m.Bin = config.Duration{Duration: time.Hour}
		m.Origin = origin
		for k, n := range c.names {
			m.Product = append(m.Product, config.ProductConfig{Name: n, Features: c.feats[k]})
		}
		sp := modelSpec()
		m.Model, m.Fit = sp.Model, sp.Fit
		cfg.Models = append(cfg.Models, m)
	}
	return cfg
}

// running is a daemon started for a test, with a client connection.
type running struct {
	d      *daemon.Daemon
	nc     *nats.Conn
	js     jetstream.JetStream
	cancel context.CancelFunc
	done   chan error
}

func startDaemon(t testing.TB, cfg config.Config) *running {
	t.Helper()
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel)
	d, err := daemon.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	select {
	case <-d.Started():
	case err := <-r.done:
		t.Fatalf("daemon stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("daemon did not start in 60s")
	}
	if r.nc, err = nats.Connect(d.NATSURL()); err != nil {
		t.Fatal(err)
	}
	if r.js, err = jetstream.New(r.nc, jetstream.WithPublishAsyncMaxPending(4096)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.stop)
	return r
}

func (r *running) stop() {
	if r.cancel == nil {
		return
	}
	r.nc.Close()
	r.cancel()
	<-r.done
	r.cancel = nil
}

// collector keeps every latent message a subscription saw.
type collector struct {
	mu   sync.Mutex
	msgs []wire.LatentMessage
	ids  map[string]int
}

func collect(t testing.TB, nc *nats.Conn, subject string) *collector {
	c := &collector{ids: map[string]int{}}
	_, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var lm wire.LatentMessage
		if err := json.Unmarshal(m.Data, &lm); err != nil {
			t.Errorf("undecodable output: %v", err)
			return
		}
		c.mu.Lock()
		c.msgs = append(c.msgs, lm)
		c.ids[lm.MsgID()]++
		c.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wait polls until cond holds or the deadline passes.
func (c *collector) wait(t testing.TB, what string, d time.Duration, cond func([]wire.LatentMessage) bool) []wire.LatentMessage {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		c.mu.Lock()
		ok := cond(c.msgs)
		msgs := append([]wire.LatentMessage(nil), c.msgs...)
		c.mu.Unlock()
		if ok {
			return msgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%d messages so far)", what, len(msgs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func count(kind string) func([]wire.LatentMessage) int {
	return func(ms []wire.LatentMessage) int {
		n := 0
		for _, m := range ms {
			if m.Kind == kind {
				n++
			}
		}
		return n
	}
}

// TestDaemonFilteredEqualsBatchFilter replays a simulated cluster through
// a daemon on a real embedded nats-server and checks (a) every published
// filtered mean and variance against a batch Kalman filter run over the
// sites the online refinement chooses for the same bins and
// hyperparameters (1e-9), and (c) that every bin is published exactly
// once, with every product.
func TestDaemonFilteredEqualsBatchFilter(t *testing.T) {
	t.Parallel()
	c := simulated(t, 5, 7)
	cfg := daemonConfig(t, c, 1)
	cfg.Models[0].Resmooth.EveryBins = 0 // no re-smooth: the head stays the online filter's
	r := startDaemon(t, cfg)
	col := collect(t, r.nc, "dcgp.latent.cluster0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := natsio.Replay(ctx, r.js, "cluster0", c.bins, natsio.ReplayOptions{Width: time.Hour, Watermark: true}); err != nil {
		t.Fatal(err)
	}
	n := len(c.bins)
	msgs := col.wait(t, "every filtered bin", time.Minute, func(ms []wire.LatentMessage) bool { return count(wire.KindFiltered)(ms) >= n })

	// The independent route: the sites the online step picks, then the
	// batch filter over them.
	built, err := modelSpec().Build(spec.Summary{Variance: 1, MedianStep: 1, Features: c.feats, NP: len(c.names), Names: c.names}, "")
	if err != nil {
		t.Fatal(err)
	}
	on, err := cvi.NewOnline(built.Model, built.Lik, cvi.DefaultOnlineOptions())
	if err != nil {
		t.Fatal(err)
	}
	np := len(c.names)
	sites := filter.NewSites(n, np, built.Lik.Joint())
	var res cvi.BinResult
	for b := 0; b < n; b++ {
		if err := on.Step(c.data.Times[b], c.data.Bin(b), &res); err != nil {
			t.Fatal(err)
		}
		l1, l2 := sites.Bin(b)
		copy(l1, res.Nat1)
		copy(l2, res.Nat2)
	}
	var post filter.Posterior
	if err := filter.Filter(&post, built.Model, c.data.Times, sites); err != nil {
		t.Fatal(err)
	}
	got := map[int64]wire.LatentMessage{}
	for _, m := range msgs {
		if m.Kind != wire.KindFiltered {
			continue
		}
		if _, dup := got[m.BinStart.Unix()]; dup {
			t.Fatalf("bin %s published twice", m.BinStart)
		}
		got[m.BinStart.Unix()] = m
	}
	worst := 0.0
	for b, rb := range c.bins {
		m, ok := got[rb.Start.Unix()]
		if !ok {
			t.Fatalf("bin %s never published", rb.Start)
		}
		if m.Missing != "" || len(m.Estimates) != np || len(m.Forecasts) != cfg.Models[0].Horizon {
			t.Fatalf("bin %s: missing %q, %d estimates, %d forecasts", rb.Start, m.Missing, len(m.Estimates), len(m.Forecasts))
		}
		for k, e := range m.Estimates {
			wm, wv := post.Mean[b*np+k], post.Var[b*np+k]
			dm, dv := math.Abs(e.Mean-wm)/(1+math.Abs(wm)), math.Abs(e.Var-wv)/wv
			worst = math.Max(worst, math.Max(dm, dv))
			if dm > 1e-9 || dv > 1e-9 || e.Product != c.names[k] {
				t.Fatalf("bin %d product %s: published (%v, %v), batch filter (%v, %v)", b, e.Product, e.Mean, e.Var, wm, wv)
			}
			if e.Observed != !math.IsNaN(c.data.Bin(b)[k].Y) {
				t.Fatalf("bin %d product %s: observed flag %v", b, e.Product, e.Observed)
			}
		}
	}
	t.Logf("%d bins × %d products: worst relative difference from the batch filter %.2g", n, np, worst)
	for id, k := range col.ids {
		if k != 1 {
			t.Fatalf("message %s published %d times", id, k)
		}
	}
}

// TestDaemonResmoothEqualsFit: (b) after a re-smooth whose window covers
// every bin, with learning off, the smoothed revision equals `dcgpd fit
// --config` with learn = false from the same hyperparameters; (c) each
// bin is published once per kind and revision.
func TestDaemonResmoothEqualsFit(t *testing.T) {
	t.Parallel()
	// Both sides are CVI fixed points reached from different starts (the
	// online sites vs zero sites) at the same ELBO tolerance (1e-9
	// relative). Measured (go test -v -run TestDaemonResmoothEqualsFit
	// ./test/): full sites max |Δmean| 3.3e-4 of the largest posterior sd
	// 1.17 (2.8e-4 of it), relative Δvar 6.3e-5; diagonal sites 4e-5 of
	// 1.04 (3.8e-5), relative Δvar 1.7e-6. The bounds are 3.5 and 2.6
	// times those.
	for _, tc := range []struct {
		sites string
		tol   float64
	}{{"full", 1e-3}, {"diagonal", 1e-4}} {
		t.Run(tc.sites, func(t *testing.T) { resmoothEqualsFit(t, tc.sites, tc.tol) })
	}
}

func resmoothEqualsFit(t *testing.T, sites string, tol float64) {
	c := simulated(t, 5, 7)
	n := len(c.bins)
	cfg := daemonConfig(t, c, 1)
	cfg.Models[0].Model.Diffusion.Sites = sites
	cfg.Models[0].Resmooth = config.ResmoothConfig{EveryBins: n, Window: n}
	r := startDaemon(t, cfg)
	col := collect(t, r.nc, "dcgp.latent.cluster0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := natsio.Replay(ctx, r.js, "cluster0", c.bins, natsio.ReplayOptions{Width: time.Hour, Watermark: true}); err != nil {
		t.Fatal(err)
	}
	msgs := col.wait(t, "the smoothed revision", 2*time.Minute, func(ms []wire.LatentMessage) bool { return count(wire.KindSmoothed)(ms) >= n })

	// The same data and model through the batch command line.
	dir := t.TempDir()
	writeClusterCSV(t, dir, c, sites)
	code, _, stderr := runCLI(t, "fit", "--obs", filepath.Join(dir, "obs.csv"), "--products", filepath.Join(dir, "products.csv"),
		"--config", filepath.Join(dir, "model.toml"), "--out", filepath.Join(dir, "post.csv"))
	if code != 0 {
		t.Fatalf("fit: %s", stderr)
	}
	recs := readCSV(t, filepath.Join(dir, "post.csv"))
	type key struct {
		t int64
		p string
	}
	fit := map[key][2]float64{}
	for _, rec := range recs[1:] {
		tm, err := time.Parse(time.RFC3339, rec[0])
		if err != nil {
			t.Fatal(err)
		}
		m, _ := strconv.ParseFloat(rec[2], 64)
		v, _ := strconv.ParseFloat(rec[3], 64)
		fit[key{tm.Unix(), rec[1]}] = [2]float64{m, v}
	}
	var worstM, worstV, sd float64
	seen := 0
	for _, m := range msgs {
		if m.Kind != wire.KindSmoothed {
			continue
		}
		if m.Revision != 1 {
			t.Fatalf("smoothed revision %d, want 1 (one re-smooth)", m.Revision)
		}
		for _, e := range m.Estimates {
			f, ok := fit[key{m.BinStart.Unix(), e.Product}]
			if !ok {
				t.Fatalf("no fit row for %s %s", m.BinStart, e.Product)
			}
			worstM = math.Max(worstM, math.Abs(e.Mean-f[0]))
			worstV = math.Max(worstV, math.Abs(e.Var-f[1])/f[1])
			sd = math.Max(sd, math.Sqrt(f[1]))
			seen++
		}
	}
	if seen != n*len(c.names) {
		t.Fatalf("%d smoothed estimates, want %d", seen, n*len(c.names))
	}
	t.Logf("%s sites, smoothed vs fit: max |Δmean| %.3g (largest posterior sd %.3g), max relative Δvar %.3g", sites, worstM, sd, worstV)
	if worstM > tol*sd || worstV > tol {
		t.Fatalf("smoothed differs from fit: max |Δmean| %v, max relative Δvar %v", worstM, worstV)
	}
	for id, k := range col.ids {
		if k != 1 {
			t.Fatalf("message %s published %d times", id, k)
		}
	}
}

// writeClusterCSV writes a cluster and the test model as fit's inputs.
func writeClusterCSV(t *testing.T, dir string, c *cluster, sites string) {
	t.Helper()
	var obs, prods []byte
	obs = append(obs, "time,product,demand,supply,censored\n"...)
	for b, rb := range c.bins {
		for k, name := range c.names {
			o := c.data.Bin(b)[k]
			y, u, cen := "", "", "0"
			if !math.IsNaN(o.Y) {
				y = strconv.FormatFloat(o.Y, 'g', -1, 64)
			}
			if !math.IsInf(o.Supply, 1) {
				u = strconv.FormatFloat(o.Supply, 'g', -1, 64)
			}
			if o.Censored {
				cen = "1"
			}
			obs = append(obs, fmt.Sprintf("%s,%s,%s,%s,%s\n", rb.Start.Format(time.RFC3339), name, y, u, cen)...)
		}
	}
	prods = append(prods, "product,x,y\n"...)
	for k, name := range c.names {
		prods = append(prods, fmt.Sprintf("%s,%v,%v\n", name, c.feats[k][0], c.feats[k][1])...)
	}
	model := `[model]
likelihood = "diffusion"
noise_variance = 1.5
[[model.temporal]]
kernel = "matern32"
variance = 6.0
lengthscale = 24.0
[[model.temporal]]
kernel = "periodic"
variance = 4.0
period = 24.0
harmonics = 4
lengthscale = 1.0
[model.diffusion]
lengthscale = 250.0
sink = 0.2
sites = "` + sites + `"
[fit]
learn = false
`
	for name, b := range map[string][]byte{"obs.csv": obs, "products.csv": prods, "model.toml": []byte(model)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDaemonQueriesDuringResmooth: (d) the query service answers while a
// re-smooth with re-learning runs, from the read view swapped in after
// each bin.
func TestDaemonQueriesDuringResmooth(t *testing.T) {
	t.Parallel()
	c := simulated(t, 5, 7)
	n := len(c.bins)
	cfg := daemonConfig(t, c, 1)
	cfg.Models[0].Resmooth = config.ResmoothConfig{EveryBins: n, Window: n, Relearn: true}
	r := startDaemon(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := natsio.Replay(ctx, r.js, "cluster0", c.bins, natsio.ReplayOptions{Width: time.Hour, Watermark: true}); err != nil {
		t.Fatal(err)
	}
	q, _ := json.Marshal(query.Query{Model: "cluster0", Product: c.names[0]})
	during, finished := 0, false
	var slowest time.Duration
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		began := time.Now()
		msg, err := r.nc.Request(query.StatusSubject, q, 2*time.Second)
		if err != nil {
			t.Fatalf("status query: %v", err)
		}
		var st stream.Status
		if err := json.Unmarshal(msg.Data, &st); err != nil {
			t.Fatal(err)
		}
		est, err := r.nc.Request(query.EstimateSubject, q, 2*time.Second)
		if err != nil {
			t.Fatalf("estimate query: %v", err)
		}
		if code := est.Header.Get("Nats-Service-Error-Code"); code != "" {
			if code != "404" || st.Bins > 0 {
				t.Fatalf("estimate query: error %s %s", code, est.Header.Get("Nats-Service-Error"))
			}
		} else {
			var rep query.EstimateReply
			if err := json.Unmarshal(est.Data, &rep); err != nil || len(rep.Estimates) != 1 || rep.Estimates[0].Product != c.names[0] {
				t.Fatalf("estimate reply %s: %v", est.Data, err)
			}
		}
		slowest = max(slowest, time.Since(began))
		if st.Resmoothing {
			during++
		} else if during > 0 {
			// The re-smooth has finished (it is swapped in only at bin
			// 2n, after the input): one answer after it is enough.
			finished = true
			break
		}
	}
	if during == 0 {
		t.Fatal("no query was answered while the re-smooth ran")
	}
	if !finished {
		t.Fatal("the re-smooth did not finish within two minutes")
	}
	t.Logf("%d status+estimate pairs answered during the re-smooth, slowest pair %v", during, slowest)
}
