package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// TestOCPICommand runs `dcgpd ocpi` against a local OCPI locations
// endpoint (two EVSEs, the token from a file) and an embedded NATS whose
// stream stores the EVSE subject; both statuses are stored, and the
// command stops on cancellation.
func TestOCPICommand(t *testing.T) {
	st := adapterStream(t, "EVSE", "dcgp.evse.>")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().UTC()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Token "+base64.StdEncoding.EncodeToString([]byte("secret-token")) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Total-Count", "1")
		fmt.Fprintf(w, `{"data": [{"id": "site-north", "evses": [
			{"uid": "N-1", "status": "CHARGING", "last_updated": %q},
			{"uid": "N-2", "status": "AVAILABLE", "last_updated": %q}]}],
			"status_code": 1000, "status_message": "Success", "timestamp": %q}`,
			now.Add(-time.Minute).Format(time.RFC3339), now.Add(-time.Hour).Format(time.RFC3339), now.Format(time.RFC3339))
	}))
	defer srv.Close()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"ocpi", "--url", srv.URL + "/ocpi/2.2.1/locations", "--model", "ev", "--token-file", token, "--log-format", "json"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := st.Info(ctx)
		if err == nil && info.State.Msgs == 3 {
			break
		}
		if time.Now().After(deadline) {
			stop()
			<-done
			t.Fatalf("no 2 status messages and a poll marker stored within 20 s; stderr:\n%s", stderr.String())
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
	var m ocpi.StatusMessage
	if err := json.Unmarshal(raw.Data, &m); err != nil {
		t.Fatal(err)
	}
	if raw.Subject != "dcgp.evse.ev" || m.Site != "site-north" || m.EVSE != "N-1" || m.Status != "CHARGING" {
		t.Fatalf("stored %s: %+v", raw.Subject, m)
	}
	raw, err = st.GetMsg(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if pm, err := ocpi.DecodeMessage(raw.Data); err != nil || pm.Kind != ocpi.KindPoll {
		t.Fatalf("third message %s: %v, want the poll marker", raw.Data, err)
	}
	if !strings.Contains(stdout.String(), "publishing to dcgp.evse.ev") {
		t.Fatalf("stdout %q", stdout.String())
	}
}

func TestOCPICommandUsage(t *testing.T) {
	for _, args := range [][]string{{"ocpi"}, {"ocpi", "--url", "http://x/locations"}, {"ocpi", "--url", "locations", "--model", "ev"},
		{"ocpi", "--url", "http://x/locations", "--model", "ev", "--clock", "moon"}} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out, &out); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}
