package stream

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// runFeed hands every message of feed to a new runner for m and returns
// the runner and its outputs by id.
func runFeed(t *testing.T, c *config.Config, m config.ModelConfig, feed []*wire.ObsMessage, each func(i int, r *Runner)) (*Runner, *memSink) {
	t.Helper()
	sink := newMemSink()
	r, err := NewRunner(c, m, sink, zerolog.Nop(), NewMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // a re-smooth still running stops
	for i, msg := range feed {
		r.handle(ctx, input{msg: msg, seq: uint64(i + 1), at: *msg.BinStart})
		if each != nil {
			each(i, r)
		}
	}
	return r, sink
}

// TestRelearnOnFirstFullWindow: with re-learning on, the daemon re-learns
// as soon as its window is first full (bin 30 of a 30-bin window), not at
// the schedule (every 100 bins), and swaps the learned hyperparameters in
// apply_after bins later; the status shows them. Twice the same input
// gives the same output bytes.
func TestRelearnOnFirstFullWindow(t *testing.T) {
	c, m := catchUpConfig(true)
	m.Model.Temporal = m.Model.Temporal[:1]                                  // Matérn-3/2 only: fast
	m.Model.Temporal[0].Variance, m.Model.Temporal[0].Lengthscale = 0.5, 200 // far from the data's
	m.Resmooth = config.ResmoothConfig{EveryBins: 100, Window: 30, ApplyAfter: 5, Relearn: true, MaxWait: config.Duration{Duration: 5 * 60e9}}
	feed := catchUpFeed(40, m.Origin)
	start := ""
	swappedAt := -1
	r, sink := runFeed(t, c, m, feed, func(i int, r *Runner) {
		ps := paramString(r)
		if i == 0 {
			start = ps
		}
		if ps != start && swappedAt < 0 {
			swappedAt = i
		}
	})
	// Window full at bin index 29; swapped in before bin 29+5 is processed.
	if swappedAt != 34 {
		t.Fatalf("learned hyperparameters swapped in at bin %d, want 34 (first full window at 29, apply_after 5)", swappedAt)
	}
	if r.revision != 1 {
		t.Errorf("revision %d, want 1", r.revision)
	}
	if got := statusString(r); got == start || got != paramString(r) {
		t.Errorf("status parameters %s: not the learned ones %s", got, paramString(r))
	}
	_, again := runFeed(t, c, m, feed, nil)
	assertSameOutputs(t, sink, again)
}

// TestRelearnFullWindowWithPendingJob: when the window fills while a
// scheduled re-smooth is pending, that one is swapped in at once and the
// re-learn starts at the same bin; the outputs stay a function of the
// input.
func TestRelearnFullWindowWithPendingJob(t *testing.T) {
	c, m := catchUpConfig(true)
	m.Model.Temporal = m.Model.Temporal[:1]
	m.Resmooth = config.ResmoothConfig{EveryBins: 20, Window: 30, ApplyAfter: 15, Relearn: true, MaxWait: config.Duration{Duration: 5 * 60e9}}
	feed := catchUpFeed(50, m.Origin)
	var revs []int
	_, sink := runFeed(t, c, m, feed, func(i int, r *Runner) { revs = append(revs, r.revision) })
	// Job 1 starts at bin 19 (due at 34), is swapped in at 29 when the
	// window fills; job 2 (the full-window re-learn) is due at 29+15 = 44.
	if revs[28] != 0 || revs[29] != 1 || revs[43] != 1 || revs[44] != 2 {
		t.Errorf("revisions %v: want the first swapped in at bin 29, the second at 44", revs)
	}
	_, again := runFeed(t, c, m, feed, nil)
	assertSameOutputs(t, sink, again)
}

func paramString(r *Runner) string {
	b, _ := json.Marshal(r.built.Parameters())
	return string(b)
}

func statusString(r *Runner) string {
	b, _ := json.Marshal(r.View().Status.Parameters)
	return string(b)
}

// assertSameOutputs checks that two runs published the same ids with the
// same bytes.
func assertSameOutputs(t *testing.T, a, b *memSink) {
	t.Helper()
	if len(a.byID) != len(b.byID) {
		t.Fatalf("%d outputs, again %d", len(a.byID), len(b.byID))
	}
	for id, v := range a.byID {
		if string(b.byID[id]) != string(v) {
			t.Fatalf("%s differs between two runs on the same input", id)
		}
	}
}

// TestResmoothTolerance measures what the re-smooth's convergence test
// costs in accuracy: the catch-up feed run with resmooth.tolerance 1e-6 and with
// 1e-9 publishes the same ids, and every mean (filtered, forecast and
// smoothed) differs by at most 1% of its standard deviation.
func TestResmoothTolerance(t *testing.T) {
	c, m := catchUpConfig(false)
	m.Model.Temporal[1].Harmonics = 3
	m.Resmooth.Window = 72 // 9 re-smooths of 72 bins: light enough for the race detector
	feed := catchUpFeed(240, m.Origin)
	m.Resmooth.Tolerance = 1e-6
	_, loose := runFeed(t, c, m, feed, nil)
	m.Resmooth.Tolerance = 1e-9
	_, tight := runFeed(t, c, m, feed, nil)
	if len(loose.byID) != len(tight.byID) {
		t.Fatalf("%d outputs, %d with 1e-9", len(loose.byID), len(tight.byID))
	}
	worst, where := 0.0, ""
	ids := make([]string, 0, len(loose.byID))
	for id := range loose.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		var a, b wire.LatentMessage
		if err := json.Unmarshal(loose.byID[id], &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(tight.byID[id], &b); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		ea, eb := allEstimates(&a), allEstimates(&b)
		for k := range ea {
			d := math.Abs(ea[k].Mean-eb[k].Mean) / math.Sqrt(eb[k].Var)
			if d > worst {
				worst, where = d, id
			}
		}
	}
	t.Logf("largest difference: %.3g standard deviations (%s)", worst, where)
	if worst > 0.01 {
		t.Errorf("re-smooth tolerance 1e-6 moves a mean by %.3g sd (%s), want at most 0.01", worst, where)
	}
}

// allEstimates lists a message's estimates and its forecasts'.
func allEstimates(m *wire.LatentMessage) []wire.Estimate {
	out := append([]wire.Estimate(nil), m.Estimates...)
	for _, f := range m.Forecasts {
		out = append(out, f.Estimates...)
	}
	return out
}
