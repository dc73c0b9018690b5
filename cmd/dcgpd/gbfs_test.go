package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// TestGBFSCommand runs `dcgpd gbfs` against a local GBFS 2.3 server
// (timestamps of now) and an embedded NATS whose stream stores the status
// subject, with the URL given by NATS_URL; it stops on cancellation.
func TestGBFSCommand(t *testing.T) {
	st := adapterStream(t, "STATUS", "dcgp.status.>")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().Unix()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gbfs.json":
			fmt.Fprintf(w, `{"last_updated": %d, "ttl": 60, "version": "2.3", "data": {"en": {"feeds": [
				{"name": "station_information", "url": "%s/si.json"}, {"name": "station_status", "url": "%s/ss.json"}]}}}`, now, srv.URL, srv.URL)
		case "/si.json":
			fmt.Fprintf(w, `{"last_updated": %d, "ttl": 3600, "version": "2.3", "data": {"stations": [
				{"station_id": "a", "name": "A", "lat": 40.7, "lon": -74.0, "capacity": 10}]}}`, now)
		case "/ss.json":
			fmt.Fprintf(w, `{"last_updated": %d, "ttl": 60, "version": "2.3", "data": {"stations": [
				{"station_id": "a", "num_bikes_available": 4, "num_docks_available": 6, "is_installed": true,
				 "is_renting": true, "is_returning": true, "last_reported": %d}]}}`, now, now-5)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	runCtx, stop := context.WithCancel(ctx)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"gbfs", "--url", srv.URL + "/gbfs.json", "--feed", "city", "--log-format", "json"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := st.Info(ctx)
		if err == nil && info.State.Msgs == 1 {
			break
		}
		if time.Now().After(deadline) {
			stop()
			<-done
			t.Fatalf("no status message stored within 20 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	raw, err := st.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := stationstatus.Decode(raw.Data)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Subject != "dcgp.status.city" || len(m.Stations) != 1 || m.Stations[0].BikesAvailable != 4 || *m.Stations[0].Capacity != 10 {
		t.Fatalf("stored %s: %+v", raw.Subject, m)
	}
	if !strings.Contains(stdout.String(), "publishing to dcgp.status.city") {
		t.Fatalf("stdout %q", stdout.String())
	}
}

func TestGBFSCommandUsage(t *testing.T) {
	for _, args := range [][]string{{"gbfs"}, {"gbfs", "--url", "http://x/gbfs.json"}, {"gbfs", "--url", "gbfs.json", "--feed", "x"}} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out, &out); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}
