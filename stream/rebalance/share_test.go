package rebalance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// cityBin is a job's input for one bin over n stations: a status message
// (capacities 0..40, every inventory, a few stations out of service and
// a few without status) and both flows' forecasts over h bins, means and
// variances varying by station and horizon.
func cityBin(n, h int) ([]string, *stationstatus.Message, *FlowForecast, *FlowForecast) {
	names := make([]string, n)
	var samples []stationstatus.Sample
	for i := range names {
		names[i] = fmt.Sprintf("st-%03d", i)
		if i%17 == 5 {
			continue // no status
		}
		c := (i * 7) % 41
		bikes := (i * 13) % (c + 1)
		samples = append(samples, stationstatus.Sample{Station: names[i], BikesAvailable: bikes, DocksAvailable: ip(c - bikes),
			Installed: true, Renting: i%23 != 3, Returning: true, LastReported: at(57)})
	}
	pm, rm := make([]float64, n), make([]float64, n)
	for i := range pm {
		pm[i], rm[i] = 0.2+float64(i%9), 0.5+float64((i*5)%7)
	}
	pick, ret := flow("pickups", names, pm, h), flow("returns", names, rm, h)
	for k := range h {
		for i := range names {
			pick.Var[k][i], ret.Var[k][i] = 0.1+0.3*float64((i+k)%6), 0.2+0.25*float64((i*3+k)%5)
		}
	}
	return names, &stationstatus.Message{Schema: 1, Feed: "city", At: at(58), Stations: samples}, pick, ret
}

// published runs one bin through a job of w workers and returns what it
// published.
func published(t *testing.T, w int) *memOut {
	t.Helper()
	cfg := testConfig()
	cfg.Workers = w
	names, status, pick, ret := cityBin(90, 8)
	out := &memOut{}
	j, err := NewJob(cfg, names, out, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(j.risker.workers); got != w {
		t.Fatalf("%d workers, want %d", got, w)
	}
	j.Ingest(status)
	j.Take(context.Background(), pick)
	j.Take(context.Background(), ret)
	if len(out.kv) != len(names) || len(out.msgs) == 0 {
		t.Fatalf("%d workers: %d bucket entries and %d messages for %d stations", w, len(out.kv), len(out.msgs), len(names))
	}
	return out
}

// TestRecordsIdenticalWhateverWorkers: the messages and bucket entries of
// a bin are the same bytes at 1, 2 and 7 workers.
func TestRecordsIdenticalWhateverWorkers(t *testing.T) {
	one := published(t, 1)
	ok := 0
	for _, data := range one.kv {
		if bytes.Contains(data, []byte(`"status":"ok"`)) {
			ok++
		}
	}
	if ok < 60 {
		t.Fatalf("only %d stations with a risk: the comparison would prove little", ok)
	}
	for _, w := range []int{2, 7} {
		got := published(t, w)
		if fmt.Sprint(got.ids) != fmt.Sprint(one.ids) || len(got.msgs) != len(one.msgs) {
			t.Fatalf("%d workers: message ids %v, want %v", w, got.ids, one.ids)
		}
		for i := range one.msgs {
			if !bytes.Equal(got.msgs[i], one.msgs[i]) {
				t.Fatalf("%d workers: message %s differs from 1 worker's", w, one.ids[i])
			}
		}
		for k, data := range one.kv {
			if !bytes.Equal(got.kv[k], data) {
				t.Fatalf("%d workers: bucket entry %s differs:\n%s\nwant\n%s", w, k, got.kv[k], data)
			}
		}
	}
}

// settledGoroutines waits up to 2 s for the goroutine count to fall to
// at most want and returns it.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// TestComputeStopsWithContext: a cancelled bin stops its workers within
// a station each, returns the context's error and leaves no goroutine.
func TestComputeStopsWithContext(t *testing.T) {
	cfg := testConfig()
	cfg.Workers = 3
	names, status, pick, ret := cityBin(3000, 24) // seconds of work
	tr := NewTracker(cfg, names)
	tr.Ingest(status)
	rk, err := NewRisker(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	began := time.Now()
	got, err := rk.Compute(ctx, pick, ret)
	if !errors.Is(err, context.DeadlineExceeded) || got != nil {
		t.Fatalf("Compute after the deadline: %d records, error %v; want none and the deadline", len(got), err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("Compute took %v to stop", d)
	}
	if n := settledGoroutines(before); n > before {
		t.Fatalf("%d goroutines after Compute stopped, %d before", n, before)
	}
}

// TestRunStopsMidBin: Run returns when its context ends while a bin is
// being computed, and its workers with it.
func TestRunStopsMidBin(t *testing.T) {
	cfg := testConfig()
	cfg.Workers = 4
	names, status, pick, ret := cityBin(3000, 24)
	out := &memOut{}
	j, err := NewJob(cfg, names, out, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	j.Ingest(status)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- j.Run(ctx) }()
	for _, f := range []*FlowForecast{pick, ret} {
		if err := j.Offer(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(30 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return within 2 s of its context ending")
	}
	if n := settledGoroutines(before); n > before {
		t.Fatalf("%d goroutines after Run returned, %d before", n, before)
	}
	if len(out.msgs) != 0 || len(out.kv) != 0 {
		t.Fatalf("a bin stopped midway published %d messages and %d entries", len(out.msgs), len(out.kv))
	}
}
