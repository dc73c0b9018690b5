package stream

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// resmoothPhase is where a model's re-smooth stands when its snapshot is
// taken over.
type resmoothPhase string

const (
	phaseNone     resmoothPhase = "none pending"
	phaseLaunched resmoothPhase = "launched"
	phaseFinished resmoothPhase = "finished, not applied"
	phaseApplied  resmoothPhase = "applied"
)

// TestTakeoverResumesPendingResmooth: a successor restores a snapshot
// under a context that ends as soon as the restore returns (the
// takeover's step context), then runs under its own lifetime context.
// At every phase of the default re-smooth schedule (apply_after =
// every_bins, so a job is pending almost always) its outputs are
// byte-identical to one uninterrupted runner's, none missing: a restored
// job is resumed under the runner's context and swapped in at its own
// bin, not cancelled with the restore's context nor waited for until
// resmooth.max_wait.
func TestTakeoverResumesPendingResmooth(t *testing.T) {
	t.Parallel()
	c, m := restoreConfig(true)
	m.Resmooth.ApplyAfter = 0 // the default: every_bins
	// A stall would show as an abandoned job (different outputs) well
	// before the default five minutes.
	m.Resmooth.MaxWait = config.Duration{Duration: 10 * time.Second}
	c.Models = []config.ModelConfig{m}
	feed := restoreFeed(60)
	bg := context.Background()
	run := func(r *Runner, from, to int) {
		for i := from; i < to; i++ {
			r.handle(bg, input{msg: feed[i], seq: uint64(i + 1), at: time.Unix(0, 0)})
		}
	}
	ref := newMemSink()
	run(newTestRunner(t, c, m, ref, nil), 0, len(feed))
	if ref.conflict != "" {
		t.Fatalf("reference run published %s twice with different content", ref.conflict)
	}

	// The successor's re-smooths wait a little before they start, as a
	// takeover's restored job is still running when the step returns.
	sc := *c
	sc.Faults.ResmoothPause = 100 * time.Millisecond
	for _, tc := range []struct {
		phase  resmoothPhase
		viaRun bool
	}{
		{phaseNone, false}, {phaseLaunched, false}, {phaseFinished, false}, {phaseApplied, false},
		{phaseLaunched, true}, {phaseFinished, true},
	} {
		name := string(tc.phase)
		if tc.viaRun {
			name += " via Run"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sink, store := newMemSink(), &memStore{}
			b := newTestRunner(t, c, m, sink, store)
			cut := runToPhase(t, b, feed, tc.phase)
			b.writeSnapshot("takeover")
			// The old owner is gone: its job with it.
			if b.cancelJob != nil {
				b.cancelJob()
			}
			r := newTestRunner(t, &sc, m, sink, store)
			step, endStep := context.WithCancel(bg)
			if err := r.Restore(step); err != nil {
				t.Fatal(err)
			}
			endStep()
			if (tc.phase != phaseNone) != (r.job != nil) {
				t.Fatalf("restored job %v at phase %q", r.job != nil, tc.phase)
			}
			if tc.viaRun {
				feedViaRun(t, r, feed, cut, ref)
			} else {
				run(r, cut, len(feed))
			}
			if sink.conflict != "" {
				t.Fatalf("%s published twice with different content", sink.conflict)
			}
			for id, want := range ref.byID {
				got, ok := sink.byID[id]
				if !ok {
					t.Fatalf("cut %d: %s missing after the takeover", cut, id)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("cut %d: %s differs after the takeover:\n got %s\nwant %s", cut, id, got, want)
				}
			}
			if len(sink.byID) != len(ref.byID) {
				t.Fatalf("cut %d: %d ids, the uninterrupted run %d", cut, len(sink.byID), len(ref.byID))
			}
		})
	}
}

// runToPhase feeds b until its re-smooth is at phase (the second job, so
// that an earlier one has been swapped in) and returns how many messages
// it took.
func runToPhase(t *testing.T, b *Runner, feed []*wire.ObsMessage, phase resmoothPhase) int {
	t.Helper()
	started := 0
	var last *pendingJob
	for i := range feed {
		rev := b.revision
		b.handle(context.Background(), input{msg: feed[i], seq: uint64(i + 1), at: time.Unix(0, 0)})
		if b.job != nil && b.job != last {
			started++
			last = b.job
		}
		switch {
		case phase == phaseNone && b.job == nil && b.processed > 2:
			return i + 1
		case phase == phaseApplied && b.revision > rev:
			return i + 1
		case phase == phaseLaunched && started == 2 && b.job != nil && b.job.res == nil:
			return i + 1
		case phase == phaseFinished && started == 2 && b.job != nil:
			select {
			case res := <-b.results:
				b.finishJob(res)
			case <-time.After(time.Minute):
				t.Fatal("the old owner's re-smooth did not finish in a minute")
			}
			if b.job.res == nil || b.job.res.err != nil {
				t.Fatalf("the old owner's re-smooth: %+v", b.job.res)
			}
			return i + 1
		}
	}
	t.Fatalf("the feed never reached phase %q", phase)
	return 0
}

// feedViaRun runs r as the daemon does (Run under its lifetime context,
// input by Submit) until it has published every id of ref, then stops it.
func feedViaRun(t *testing.T, r *Runner, feed []*wire.ObsMessage, cut int, ref *memSink) {
	t.Helper()
	life, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(life)
	}()
	defer func() {
		stop()
		<-done
	}()
	for i := cut; i < len(feed); i++ {
		if err := r.Submit(life, feed[i], uint64(i+1), nil); err != nil {
			t.Fatal(err)
		}
	}
	sink := r.sink.(*memSink)
	deadline := time.Now().Add(time.Minute)
	for {
		sink.mu.Lock()
		n := 0
		for id := range ref.byID {
			if _, ok := sink.byID[id]; ok {
				n++
			}
		}
		sink.mu.Unlock()
		if n == len(ref.byID) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d ids after a minute", n, len(ref.byID))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
