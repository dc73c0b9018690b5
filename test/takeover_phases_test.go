package test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// takeoverMode is how a model's owner goes away.
type takeoverMode string

const (
	byKill     takeoverMode = "kill"     // kill -9
	bySIGSTOP  takeoverMode = "sigstop"  // stopped past the lease, then resumed
	byHandover takeoverMode = "handover" // SIGINT: snapshot, release; a new instance joins
)

// phaseStages is the input fed before each takeover, as bin ranges of
// every model, with the re-smooth phase the takeover lands in under the
// default schedule (every_bins 24, apply_after = every_bins): the first
// job starts after bin 23 and is swapped in before bin 47, the next
// starts there. The log line (model, message) the takeover waits for on
// the owner marks the phase.
var phaseStages = []struct {
	phase    string
	lo, hi   int
	waitFor  string
	sameFeed bool // the line comes without new input
}{
	{phase: "none pending", lo: 0, hi: 12},
	{phase: "launched", lo: 12, hi: 30, waitFor: "re-smooth started"},
	{phase: "finished, not applied", waitFor: "re-smoothed", sameFeed: true},
	{phase: "applied", lo: 30, hi: 60, waitFor: "re-smooth swapped in"},
}

// resmoothPause keeps every re-smooth running at least this long
// (DCGPD_FAULT_PAUSE), so that a takeover sent on "re-smooth started"
// lands while the job runs.
const resmoothPause = "resmooth=2s"

// phaseRun is one cluster run of takeovers.
type phaseRun struct {
	t      *testing.T
	c      *cluster
	srv    servers
	js     jetstream.JetStream
	seen   *seenOutputs
	cfg    string
	procs  []*dcgpdProc
	models int
}

func (r *phaseRun) start() *dcgpdProc {
	t := r.t
	p := startDcgpd(t, r.cfg, resmoothPause)
	t.Cleanup(func() {
		p.stop(t)
		noRace(t, p)
	})
	if _, err := p.waitLog("dcgpd serving", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	r.procs = append(r.procs, p)
	return p
}

// live are the processes not killed or stopped for good.
func (r *phaseRun) live() []*dcgpdProc {
	var out []*dcgpdProc
	for _, p := range r.procs {
		select {
		case <-p.done:
		default:
			out = append(out, p)
		}
	}
	return out
}

// ownerOf is the live process holding model's lease.
func (r *phaseRun) ownerOf(model string) *dcgpdProc {
	held := owners(r.t, r.js)
	for _, p := range r.live() {
		if instanceOf(p) == held[model] {
			return p
		}
	}
	r.t.Fatalf("no live process holds %s (leases %v)", model, held)
	return nil
}

// balanced waits until the live processes hold every model, two each.
func (r *phaseRun) balanced(what string) {
	r.t.Helper()
	live := r.live()
	waitOwners(r.t, r.js, 90*time.Second, what, func(o map[string]string) bool {
		if len(o) != r.models {
			return false
		}
		for _, p := range live {
			if load(o)[instanceOf(p)] != r.models/len(live) {
				return false
			}
		}
		return true
	})
}

func (r *phaseRun) feed(lo, hi int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range r.models {
		if _, err := natsio.Replay(ctx, r.js, fmt.Sprintf("cluster%d", i), r.c.bins[lo:hi], natsio.ReplayOptions{Width: time.Hour, Watermark: true}); err != nil {
			r.t.Fatal(err)
		}
	}
}

// waitBin waits until every model has published bin b's filtered estimate.
func (r *phaseRun) waitBin(b int) {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r.seen.mu.Lock()
		done := true
		for i := 0; i < r.models && done; i++ {
			done = hasFiltered(r.seen.byID, fmt.Sprintf("cluster%d", i), r.c.bins[b].Start)
		}
		r.seen.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("bin %d not published by every model in 2 minutes", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// takeover makes victim's models move by mode and waits until the live
// instances hold every model again, two each.
func (r *phaseRun) takeover(mode takeoverMode, victim *dcgpdProc, phase string) {
	t := r.t
	name := instanceOf(victim)
	held := owners(t, r.js)
	var its []string
	for m, inst := range held {
		if inst == name {
			its = append(its, m)
		}
	}
	slices.Sort(its)
	began := time.Now()
	gone := func(o map[string]string) bool {
		if len(o) != r.models {
			return false
		}
		_, has := load(o)[name]
		return !has
	}
	switch mode {
	case byKill:
		victim.kill(t)
		waitOwners(t, r.js, 90*time.Second, "the killed instance's models on the others", gone)
		r.start()
	case bySIGSTOP:
		if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitOwners(t, r.js, 90*time.Second, "the stopped instance's models on the others", gone)
		if err := victim.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if _, err := victim.waitLog("model lease lost: stopped working on it", 1, 30*time.Second); err != nil {
			t.Fatalf("the resumed instance did not see its leases lost: %v", err)
		}
	case byHandover:
		victim.stop(t)
		if _, err := victim.waitLog("model handed over", 1, time.Second); err != nil {
			t.Fatalf("SIGINT without a clean handover: %v", err)
		}
		r.start()
	}
	r.balanced("two models per instance after the takeover")
	t.Logf("%s of %s at phase %q (owner of %v): settled after %v", mode, name, phase, its, time.Since(began).Round(time.Millisecond))
}

// runPhases runs three instances over srv and takes a model over by
// mode at each re-smooth phase, then checks every output against ref.
// If downAtKill, a final kill -9 mid-stream comes with one server
// stopped, and the time to the successors' first output is logged.
func runPhases(t *testing.T, c *cluster, ref map[string][]byte, srv servers, mode takeoverMode, models int) {
	nc, js := clientJS(t, srv.URLs())
	r := &phaseRun{t: t, c: c, srv: srv, js: js, seen: watchOutputs(t, nc), models: models}
	r.cfg = writeClusterConfig(t, c, srv.URLs(), models)
	for range 3 {
		r.start()
	}
	r.balanced("6 models over 3 instances")
	for i, st := range phaseStages {
		model := fmt.Sprintf("cluster%d", i%models)
		victim := r.ownerOf(model)
		// The line may have come before this stage when no input is fed.
		from := 0
		if !st.sameFeed {
			from = victim.mark()
			r.feed(st.lo, st.hi)
		}
		if st.waitFor == "" {
			r.waitBin(st.hi - 1)
		} else if _, err := victim.waitLogModel(st.waitFor, model, from, time.Minute); err != nil {
			t.Fatalf("phase %q: %v", st.phase, err)
		}
		r.takeover(mode, victim, st.phase)
	}
	last := phaseStages[len(phaseStages)-1].hi
	if mode == byKill {
		// The rest mid-stream: a server stopped and an owner killed while
		// its input waits; the successors' first outputs are timed.
		r.feed(last, len(c.bins))
		victim := r.ownerOf("cluster1")
		dead := instanceOf(victim)
		var its []string
		for m, inst := range owners(t, js) {
			if inst == dead {
				its = append(its, m)
			}
		}
		srv.Stop(2)
		victim.kill(t)
		killed := time.Now()
		for _, m := range its {
			first := r.seen.firstAfter(killed, dead, m)
			if first < 0 {
				t.Fatalf("%s: no output from a successor within 2 minutes of the kill", m)
			}
			t.Logf("kill -9 of %s with server 2 down: %s's first output from a successor %v after the kill (lease %v)", dead, m, first.Round(time.Millisecond), clusterLease)
		}
		for _, p := range r.live() {
			t.Logf("%s: %s", instanceOf(p), p.takeoverLines(its))
		}
		srv.Restart(2)
		r.start()
	} else {
		r.feed(last, len(c.bins))
	}
	r.seen.waitAll(ref, 3*time.Minute)
	if !checkAgainstReference(t, js, r.seen, ref) {
		for _, p := range r.procs {
			t.Logf("%s: %s\n%s", instanceOf(p), p.ownershipLog(), p.problems())
		}
		t.FailNow()
	}
}

// waitAll waits until a subscriber has seen every id of ref, at most d
// (the stream, checked after, is the record: a core subscriber can miss
// a message while a server restarts).
func (o *seenOutputs) waitAll(ref map[string][]byte, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		o.mu.Lock()
		n := 0
		for id := range ref {
			if _, ok := o.byID[id]; ok {
				n++
			}
		}
		o.mu.Unlock()
		if n == len(ref) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// takeoverLines lists a process's ownership log lines for models.
func (p *dcgpdProc) takeoverLines(models []string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i, l := range p.lines {
		m, _ := l["model"].(string)
		switch l["message"] {
		case "model acquired", "model not started; lease released", "model lease lost: stopped working on it":
			if slices.Contains(models, m) {
				out = append(out, p.raw[i])
			}
		}
	}
	return strings.Join(out, "\n")
}

// problems lists a process's warning and error log lines.
func (p *dcgpdProc) problems() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i, l := range p.lines {
		if lv := l["level"]; lv == "warn" || lv == "error" {
			out = append(out, p.raw[i])
		}
	}
	return strings.Join(out, "\n")
}

// firstAfter waits (up to two minutes) for an output of model published
// after t by an instance other than dead and returns how long after t it
// came (-1: none).
func (o *seenOutputs) firstAfter(t time.Time, dead, model string) time.Duration {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		o.mu.Lock()
		var first time.Duration = -1
		for id, cs := range o.byID {
			if !strings.HasPrefix(id, model+"/") {
				continue
			}
			for _, cp := range cs {
				if cp.at.After(t) && cp.instance != dead && (first < 0 || cp.at.Sub(t) < first) {
					first = cp.at.Sub(t)
				}
			}
		}
		o.mu.Unlock()
		if first >= 0 {
			return first
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

// checkAgainstReference: every id of the uninterrupted run is stored
// once in the output stream, identical, none extra, and every copy a
// subscriber saw is identical too; false (with the test marked failed)
// if not.
func checkAgainstReference(t *testing.T, js jetstream.JetStream, seen *seenOutputs, ref map[string][]byte) bool {
	t.Helper()
	stored := storedOutputs(t, js)
	seen.mu.Lock()
	defer seen.mu.Unlock()
	missing, differ, dups := 0, 0, 0
	var example string
	for id, want := range ref {
		st := stored[id]
		switch {
		case len(st) == 0:
			missing++
			if example == "" {
				example = id + " missing"
			}
		case len(st) != 1 || !bytes.Equal(st[0], want):
			differ++
			if example == "" {
				example = fmt.Sprintf("%s: %d stored copies, first differs: %v", id, len(st), !bytes.Equal(st[0], want))
			}
		}
		for _, cp := range seen.byID[id] {
			if !bytes.Equal(cp.data, want) {
				t.Errorf("%s from %s (epoch %s) differs from the uninterrupted run", id, cp.instance, cp.epoch)
			}
		}
		if n := len(seen.byID[id]); n > 1 {
			dups += n - 1
		}
	}
	var extra []string
	for id := range stored {
		if _, ok := ref[id]; !ok {
			extra = append(extra, id)
		}
	}
	if missing+differ+len(extra) > 0 {
		t.Errorf("of %d ids: %d missing, %d different, %d not in the uninterrupted run %v; e.g. %s", len(ref), missing, differ, len(extra), extra[:min(3, len(extra))], example)
		return false
	}
	t.Logf("%d ids stored once each, byte-identical to the uninterrupted run; %d re-publications (true duplicates) seen on the subject", len(ref), dups)
	return !t.Failed()
}

// mark is the number of log lines so far.
func (p *dcgpdProc) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// waitLogModel waits for a log line with message msg for model after
// line from.
func (p *dcgpdProc) waitLogModel(msg, model string, from int, d time.Duration) (string, error) {
	deadline := time.After(d)
	for {
		p.mu.Lock()
		for i := from; i < len(p.lines); i++ {
			if l := p.lines[i]; l["message"] == msg && l["model"] == model {
				s := p.raw[i]
				p.mu.Unlock()
				return s, nil
			}
		}
		p.mu.Unlock()
		select {
		case <-p.added:
		case <-p.done:
			return "", fmt.Errorf("dcgpd exited before %q for %s:\n%s", msg, model, p.tail())
		case <-deadline:
			return "", fmt.Errorf("no %q for %s within %v; log tail:\n%s", msg, model, d, p.tail())
		}
	}
}

// stagedReference is one uninterrupted instance fed the same input in
// the same stages (so the stream holds the same messages, watermarks
// included) with the default schedules.
func stagedReference(t *testing.T, c *cluster, models int) map[string][]byte {
	t.Helper()
	cfg := daemonConfig(t, c, models)
	cfg.Snapshot.Interval = config.Duration{Duration: 300 * time.Millisecond}
	cfg.HTTP.Listen = "off"
	d := startDaemon(t, cfg)
	o := watchOutputs(t, d.nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bounds := []int{0}
	for _, st := range phaseStages {
		if !st.sameFeed {
			bounds = append(bounds, st.hi)
		}
	}
	bounds = append(bounds, len(c.bins))
	for k := 1; k < len(bounds); k++ {
		for i := range models {
			if _, err := natsio.Replay(ctx, d.js, fmt.Sprintf("cluster%d", i), c.bins[bounds[k-1]:bounds[k]], natsio.ReplayOptions{Width: time.Hour, Watermark: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	o.waitDone(t, c, models, 5*time.Minute, func() string { return "reference run" })
	d.stop()
	ref := map[string][]byte{}
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, cs := range o.byID {
		if len(cs) != 1 {
			t.Fatalf("the uninterrupted run published %s %d times", id, len(cs))
		}
		ref[id] = cs[0].data
	}
	return ref
}

// TestLongTakeoverPhases is issue 27's must-show: three `dcgpd serve` on
// one configuration of six models with the default re-smooth schedule,
// on a 3-node JetStream cluster of embedded servers and of separate
// nats-server processes; a model's owner is killed (-9), stopped past its
// lease (SIGSTOP, then SIGCONT) or stopped cleanly (SIGINT, a new
// instance joining) with no re-smooth pending, one launched, one
// finished but not applied, and one just applied. Every output id is
// stored once, byte-identical to one uninterrupted instance's, none
// missing. The kill runs end with a kill mid-stream while a server is
// down and log the time to the first output after it.
func TestLongTakeoverPhases(t *testing.T) {
	requireLongMode(t)
	const models = 6
	c := simulated(t, 4, 7)
	began := time.Now()
	ref := stagedReference(t, c, models)
	t.Logf("reference run: %d ids in %v", len(ref), time.Since(began).Round(time.Millisecond))
	for _, kind := range []string{"embedded", "processes"} {
		for _, mode := range []takeoverMode{byKill, bySIGSTOP, byHandover} {
			t.Run(kind+"/"+string(mode), func(t *testing.T) {
				var srv servers
				if kind == "embedded" {
					srv = natstest.Start(t, 3)
				} else {
					srv = startNATSProcs(t, 3)
				}
				began := time.Now()
				runPhases(t, c, ref, srv, mode, models)
				t.Logf("%s, %s: %v", kind, mode, time.Since(began).Round(time.Millisecond))
			})
		}
	}
}
