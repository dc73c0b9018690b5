package stream

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"gonum.org/v1/gonum/mat"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// nullSink drops outputs (a soak must not grow a recorder), marking
// every one stored.
type nullSink struct{ n int }

func (s *nullSink) Publish(_, _ string, _ []byte, done func(error)) { s.n++; done(nil) }
func (s *nullSink) Latest(string, []byte)                           {}
func (s *nullSink) Reject(string, []byte)                           {}

// rssBytes reads the process's resident set size from /proc (0 where
// there is none).
func rssBytes() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

// BenchmarkSoak pushes one million hourly bins (b.N = bins; run with
// -benchtime 1000000x) through one model's runner: assembly, the online
// step with the diffusion likelihood, publishing, a re-smooth of 168 bins
// every 1,000 bins swapped in 24 bins later, and snapshots to an in-memory
// store every 5,000 bins. Every bin's estimate must be finite and every
// filter covariance symmetric positive definite (checked every 10,000
// bins); it reports the resident set size after the first 10,000 bins
// and at the end.
func BenchmarkSoak(b *testing.B) {
	c, m := restoreConfig(false)
	m.Late, m.Lateness = "drop", config.Duration{}
	m.Resmooth = config.ResmoothConfig{EveryBins: 1000, ApplyAfter: 24, Window: 168, MaxWait: config.Duration{Duration: time.Minute}}
	store := &memStore{}
	sink := &nullSink{}
	r, err := NewRunner(c, m, sink, zerolog.Nop(), NewMetrics(nil))
	if err != nil {
		b.Fatal(err)
	}
	r.store = store
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 3))
	obs := make([]wire.Observation, 4)
	vals := make([]float64, 8)
	msg := &wire.ObsMessage{Schema: wire.SchemaVersion, Model: "city", Observations: obs}
	var rssStart float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := m.Origin.Add(time.Duration(i) * time.Hour)
		for k := range obs {
			vals[k] = math.Max(0, 5+3*math.Sin(float64(i)/4)+rng.NormFloat64())
			obs[k] = wire.Observation{Product: r.prods.Names[k], Demand: &vals[k]}
			if k == 1 && i%3 == 0 {
				vals[4+k] = math.Floor(vals[k] * 0.6)
				obs[k].Demand, obs[k].Supply = &vals[4+k], &vals[4+k]
			}
		}
		msg.BinStart = &start
		r.handle(ctx, input{msg: msg, seq: uint64(i + 1), at: start})
		if !finiteAll(r.res.Mean) || !finiteAll(r.res.Var) {
			b.Fatalf("bin %d: estimate not finite", i)
		}
		if i%5000 == 4999 {
			r.writeSnapshot("soak")
		}
		if i%10000 == 9999 {
			if err := checkSPD(r); err != nil {
				b.Fatalf("bin %d: %v", i, err)
			}
			if rssStart == 0 {
				runtime.GC()
				rssStart = rssBytes()
			}
		}
	}
	b.StopTimer()
	runtime.GC()
	b.ReportMetric(rssStart/1e6, "rss-start-MB")
	b.ReportMetric(rssBytes()/1e6, "rss-end-MB")
	b.ReportMetric(float64(r.processed), "bins")
	b.ReportMetric(float64(store.writes), "snapshots")
	b.ReportMetric(float64(r.revision), "resmooths")
}

// checkSPD verifies every chain's filter covariance is symmetric and has
// a Cholesky factor.
func checkSPD(r *Runner) error {
	s := r.on.Save()
	for c, cov := range s.Filter.Cov {
		d := len(s.Filter.Mean[c])
		for i := 0; i < d; i++ {
			for j := 0; j < i; j++ {
				if math.Abs(cov[i*d+j]-cov[j*d+i]) > 1e-9*(math.Abs(cov[i*d+i])+math.Abs(cov[j*d+j])) {
					return errSPDf("not symmetric", c)
				}
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(mat.NewSymDense(d, append([]float64(nil), cov...))) {
			return errSPDf("not positive definite", c)
		}
	}
	return nil
}

type errSPD string

func (e errSPD) Error() string { return string(e) }

func errSPDf(what string, c int) error { return errSPD(what + " in chain " + strconv.Itoa(c)) }

func finiteAll(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
