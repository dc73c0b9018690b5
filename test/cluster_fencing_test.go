package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// event is one message the test's subscription saw; n orders them.
type event struct {
	n       int
	subject string
	data    []byte
	hdr     nats.Header
}

// recorder keeps every message of the cluster, in the one order one
// subscription delivers them (times taken in separate callbacks would
// lag unequally).
type recorder struct {
	mu sync.Mutex
	ev []event
}

func record(t *testing.T, nc *nats.Conn, subj string) *recorder {
	t.Helper()
	r := &recorder{}
	sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
		r.mu.Lock()
		r.ev = append(r.ev, event{n: len(r.ev), subject: m.Subject, data: m.Data, hdr: m.Header})
		r.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	return r
}

// match returns the events on subjects with the prefix.
func (r *recorder) match(prefix string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.ev {
		if strings.HasPrefix(e.subject, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// epochsOf returns the models instance holds now (per the leases) with
// the epoch of its latest fence.
func epochsOf(fences []event, instance string, held map[string]string) map[string]string {
	out := map[string]string{}
	for _, e := range fences {
		var f struct {
			Instance string
			Epoch    uint64
		}
		_ = json.Unmarshal(e.data, &f)
		m := strings.TrimPrefix(e.subject, "dcgp.fence.")
		if f.Instance == instance {
			out[m] = strconv.FormatUint(f.Epoch, 10)
		} else {
			delete(out, m)
		}
	}
	for m := range out {
		if held[m] != instance {
			delete(out, m)
		}
	}
	return out
}

// TestClusterFencing: an instance stopped (SIGSTOP) past its leases and
// then continued (SIGCONT) publishes no output of the epochs it lost
// after its successor took over (published its fence), and its
// acknowledgements after that reach no consumer: the successor deleted
// the epoch's consumer before its fence. Watched on the subjects
// themselves: every output carries its publisher's instance and epoch,
// every acknowledgement names the epoch's consumer. The stopped instance
// must also notice the loss.
//
// What this end-to-end run cannot show is the server-side fence by
// itself: measured with the sink's expected-sequence check and its local
// lease gate both removed, it still passes, because the ~70 outputs the
// resumed instance then sends are ids its successor has already stored,
// which the stream's de-duplication drops anyway. stream/cluster's
// TestFencedSinkRefusedAfterSuccessorFence covers that check (it fails
// without it).
func TestClusterFencing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a 3-node JetStream cluster and two dcgpd processes")
	}
	const models = 4
	c := simulated(t, 4, 14)
	nodes := natstest.Start(t, 3)
	nc, js := clientJS(t, nodes.URLs())
	rec := record(t, nc, ">")
	outs := func() []event { return rec.match("dcgp.latent.") }
	acks := func() []event { return rec.match("$JS.ACK.") }
	fences := func() []event { return rec.match("dcgp.fence.") }
	cfgPath := writeClusterConfig(t, c, nodes.URLs(), models)
	var procs []*dcgpdProc
	for range 2 {
		p := startDcgpd(t, cfgPath, "")
		t.Cleanup(func() {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			p.stop(t)
			noRace(t, p)
		})
		if _, err := p.waitLog("dcgpd serving", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	waitOwners(t, js, 30*time.Second, "4 models over 2 instances", func(o map[string]string) bool {
		return len(o) == models && len(load(o)) == 2
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range models {
		if _, err := natsio.Replay(ctx, js, fmt.Sprintf("cluster%d", i), c.bins, natsio.ReplayOptions{Width: time.Hour, Watermark: true}); err != nil {
			t.Fatal(err)
		}
	}
	a := procs[0]
	ia := instanceOf(a)
	// Stop A while it is publishing, once the watch has seen it both
	// publish and acknowledge under the epochs it holds.
	var lostEpoch map[string]string // model -> A's epoch
	deadline := time.Now().Add(time.Minute)
	for {
		lostEpoch = epochsOf(fences(), ia, owners(t, js))
		nOut, nAck := 0, 0
		for _, e := range outs() {
			if ep, ok := lostEpoch[strings.Split(e.subject, ".")[2]]; ok && e.hdr.Get(wire.InstanceHeader) == ia && e.hdr.Get(wire.EpochHeader) == ep {
				nOut++
			}
		}
		for _, e := range acks() {
			for m, ep := range lostEpoch {
				if strings.Contains(e.subject, fmt.Sprintf(".dcgpd_%s_e%s.", m, ep)) {
					nAck++
				}
			}
		}
		if nOut >= 40 && nAck > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in a minute A published %d outputs and acknowledged %d times under its epochs %v", nOut, nAck, lostEpoch)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	rec.mu.Lock()
	stoppedAt := len(rec.ev)
	rec.mu.Unlock()
	time.Sleep(3 * clusterLease)
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("A (%s) stopped for %v holding %v", ia, time.Since(stopped).Round(time.Millisecond), lostEpoch)
	if _, err := a.waitLog("model lease lost: stopped working on it", 1, 2*clusterLease); err != nil {
		t.Errorf("A did not notice the lost leases: %v", err)
	}
	noticed := time.Now()
	time.Sleep(2 * clusterLease)

	// The successor's takeover of each model: its first fence after the stop.
	took := map[string]int{}
	for _, e := range fences() {
		m := strings.TrimPrefix(e.subject, "dcgp.fence.")
		if _, ok := lostEpoch[m]; ok && e.n >= stoppedAt && !strings.Contains(string(e.data), ia) {
			if _, seen := took[m]; !seen {
				took[m] = e.n
			}
		}
	}
	for m, epoch := range lostEpoch {
		at, ok := took[m]
		if !ok {
			t.Errorf("%s: no successor fenced A's epoch %s", m, epoch)
			continue
		}
		pubs, acked := 0, 0
		for _, e := range outs() {
			if e.n > at && e.hdr.Get(wire.InstanceHeader) == ia && e.hdr.Get(wire.EpochHeader) == epoch {
				pubs++
			}
		}
		consumer := fmt.Sprintf(".dcgpd_%s_e%s.", m, epoch)
		for _, e := range acks() {
			if e.n > at && strings.Contains(e.subject, consumer) {
				acked++
			}
		}
		// The successor deletes the previous owner's consumer before it
		// publishes its fence, so an acknowledgement arriving after the
		// fence reaches no consumer. One written to A's socket buffer
		// just before the stop is sent on SIGCONT: it is counted, and
		// must be void. A consumer A was still creating when stopped
		// lands after that deletion; A deletes it itself once it notices
		// the loss, retrying for up to two leases (docs/deployment.md),
		// the last of its models noticed up to two renewal timeouts
		// (lease/4 each) after the first: a lease of slack.
		if cerr := consumerGone(js, strings.Trim(consumer, "."), noticed.Add(3*clusterLease)); cerr != nil {
			t.Errorf("%s: A's consumer %s after the takeover: %v", m, strings.Trim(consumer, "."), cerr)
		}
		// The subscription sees every publish on the subject, also one the
		// stream refused: an output written to A's socket buffer just
		// before the stop is sent on SIGCONT, after the fence. What must
		// hold is that the stream stored none.
		if stored := storedOf(t, js, m, ia, epoch); stored > 0 {
			t.Errorf("%s: after the successor's fence the output stream stored %d outputs of A's epoch %s (%d seen on the subject)", m, stored, epoch, pubs)
		} else {
			t.Logf("%s: a successor fenced A's epoch %s; afterwards the stream stored no output of that epoch (%d sent on the subject, refused), and %d acknowledgements of it arrived, to its deleted consumer (void)",
				m, epoch, pubs, acked)
		}
	}
	// Sanity: the watch could see A's acknowledgements and outputs at all.
	ownAcks, ownOuts := 0, 0
	for _, e := range acks() {
		for m, epoch := range lostEpoch {
			if e.n < stoppedAt && strings.Contains(e.subject, fmt.Sprintf(".dcgpd_%s_e%s.", m, epoch)) {
				ownAcks++
			}
		}
	}
	for _, e := range outs() {
		if e.n < stoppedAt && e.hdr.Get(wire.InstanceHeader) == ia && lostEpoch[strings.Split(e.subject, ".")[2]] == e.hdr.Get(wire.EpochHeader) {
			ownOuts++
		}
	}
	t.Logf("before the stop the watch saw %d outputs and %d acknowledgements of A's lost epochs", ownOuts, ownAcks)
	if ownAcks == 0 {
		all := acks()
		sample := ""
		if len(all) > 0 {
			sample = all[0].subject
		}
		t.Logf("%d acknowledgements seen in all, e.g. %q", len(all), sample)
		t.Errorf("no acknowledgement of A's consumers was seen before the stop: the watch would miss them")
	}
	if ownOuts == 0 {
		t.Errorf("no output of A's lost epochs was seen before the stop: the watch would miss them")
	}
}

// consumerGone polls until the input stream's consumer name is not found,
// nil then; past the deadline it says whether the consumer still exists
// or what the last lookup returned.
func consumerGone(js jetstream.JetStream, name string, deadline time.Time) error {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := js.Consumer(ctx, "DCGP_OBS", name)
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			return nil
		case time.Now().After(deadline) && err == nil:
			return errors.New("it still exists")
		case time.Now().After(deadline):
			return fmt.Errorf("lookup failed: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// storedOf counts the outputs of model the output stream stored, in its
// own order, after a fence that followed instance's own fence of epoch
// (the successor's) and carrying that epoch. Fences and outputs share the
// stream, so its order is the server's. (An output with the same id as a
// later refused re-send, stored before the stop, is not counted: the
// sink re-sends what the server had not confirmed when the process
// stopped.)
func storedOf(t *testing.T, js jetstream.JetStream, model, instance, epoch string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, "DCGP_LATENT", jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"dcgp.latent." + model, "dcgp.fence." + model}})
	if err != nil {
		t.Fatal(err)
	}
	n, seenOwn, fenced := 0, false, false
	for {
		batch, err := cons.FetchNoWait(1000)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			if strings.HasPrefix(m.Subject(), "dcgp.fence.") {
				var f struct {
					Instance string
					Epoch    uint64
				}
				_ = json.Unmarshal(m.Data(), &f)
				own := f.Instance == instance && strconv.FormatUint(f.Epoch, 10) == epoch
				fenced = fenced || (seenOwn && !own)
				seenOwn = seenOwn || own
				continue
			}
			h := m.Headers()
			if fenced && h.Get(wire.InstanceHeader) == instance && h.Get(wire.EpochHeader) == epoch {
				n++
			}
		}
		if got == 0 {
			info, err := cons.Info(ctx)
			if err != nil || info.NumPending == 0 {
				return n
			}
		}
	}
}
