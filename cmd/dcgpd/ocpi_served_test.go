package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestOCPIServedCounts runs `dcgpd ocpi --clock response
// --served-products` against an endpoint whose clock advances a minute
// per request from 08:00: at site-north N-1 charges from 08:02:30 to
// 08:07:10 and N-2 from 08:03 on; site-east stays free. The model's
// input stream gets bin 08:00 with 2 sessions at north and 0 at east,
// bin 08:05 with 0 and 0 (a session ended, none started), each followed
// by a watermark at its end.
func TestOCPIServedCounts(t *testing.T) {
	st := adapterStream(t, "ALL", "dcgp.>")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Date(2024, 5, 8, 8, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		now := t0.Add(time.Duration(n) * time.Minute)
		n++
		mu.Unlock()
		n1, n1At := "AVAILABLE", t0.Add(-time.Hour)
		switch {
		case !now.Before(t0.Add(7*time.Minute + 10*time.Second)):
			n1, n1At = "AVAILABLE", t0.Add(7*time.Minute+10*time.Second)
		case !now.Before(t0.Add(150 * time.Second)):
			n1, n1At = "CHARGING", t0.Add(150*time.Second)
		}
		n2, n2At := "AVAILABLE", t0.Add(-time.Hour)
		if !now.Before(t0.Add(3 * time.Minute)) {
			n2, n2At = "CHARGING", t0.Add(3*time.Minute)
		}
		f := func(x time.Time) string { return x.Format(time.RFC3339) }
		w.Header().Set("X-Total-Count", "2")
		fmt.Fprintf(w, `{"data": [{"id": "site-north", "evses": [
			{"uid": "N-1", "status": %q, "last_updated": %q}, {"uid": "N-2", "status": %q, "last_updated": %q}]},
			{"id": "site-east", "evses": [{"uid": "E-1", "status": "AVAILABLE", "last_updated": %q}]}],
			"status_code": 1000, "status_message": "Success", "timestamp": %q}`, n1, f(n1At), n2, f(n2At), f(t0.Add(-time.Hour)), f(now))
	}))
	defer srv.Close()
	products := filepath.Join(t.TempDir(), "products.csv")
	if err := os.WriteFile(products, []byte("product,lat,lon\nsite-north,34.1395,-118.127\nsite-east,34.1366,-118.1226\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"ocpi", "--url", srv.URL + "/ocpi/2.2.1/locations", "--model", "ev", "--clock", "response", "--interval", "20ms",
			"--served-products", products, "--origin", "2024-05-06T00:00:00Z", "--log-format", "json"}, &stdout, &stderr)
	}()
	type got struct {
		bin  time.Time
		obs  map[string]float64
		mark time.Time
	}
	var seen []got
	var next uint64 = 1
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < 4 {
		if time.Now().After(deadline) {
			stop()
			<-done
			t.Fatalf("got %+v within 20 s; stderr:\n%s", seen, stderr.String())
		}
		raw, err := st.GetMsg(ctx, next)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		next++
		if raw.Subject != "dcgp.obs.ev" {
			continue
		}
		m, err := wire.DecodeObs(raw.Data)
		if err != nil {
			t.Fatalf("obs %s: %v", raw.Data, err)
		}
		g := got{obs: map[string]float64{}}
		if m.Watermark != nil {
			g.mark = *m.Watermark
		} else {
			g.bin = *m.BinStart
			for _, o := range m.Observations {
				g.obs[o.Product] = *o.Demand
			}
		}
		seen = append(seen, g)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	want := []got{{bin: t0, obs: map[string]float64{"site-north": 2, "site-east": 0}}, {mark: t0.Add(5 * time.Minute)},
		{bin: t0.Add(5 * time.Minute), obs: map[string]float64{"site-north": 0, "site-east": 0}}, {mark: t0.Add(10 * time.Minute)}}
	for i, w := range want {
		g := seen[i]
		if !g.bin.Equal(w.bin) || !g.mark.Equal(w.mark) || len(g.obs) != len(w.obs) || g.obs["site-north"] != w.obs["site-north"] || g.obs["site-east"] != w.obs["site-east"] {
			t.Errorf("message %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestBinsBefore: `dcgpd replay --until` keeps the bins starting before
// it and counts their observations with a demand.
func TestBinsBefore(t *testing.T) {
	t0 := time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)
	y := 1.0
	bins := []natsio.ReplayBin{
		{Start: t0, Observations: []wire.Observation{{Product: "a", Demand: &y}, {Product: "b"}}},
		{Start: t0.Add(5 * time.Minute), Observations: []wire.Observation{{Product: "a", Demand: &y}}},
		{Start: t0.Add(10 * time.Minute), Observations: []wire.Observation{{Product: "a", Demand: &y}}},
	}
	for _, c := range []struct {
		until      time.Time
		bins, nObs int
	}{{t0, 0, 0}, {t0.Add(time.Minute), 1, 1}, {t0.Add(10 * time.Minute), 2, 2}, {t0.Add(time.Hour), 3, 3}} {
		got, n := binsBefore(append([]natsio.ReplayBin(nil), bins...), c.until)
		if len(got) != c.bins || n != c.nObs {
			t.Errorf("until %v: %d bins, %d observations; want %d, %d", c.until, len(got), n, c.bins, c.nObs)
		}
	}
}
