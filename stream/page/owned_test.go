package page

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream"
)

// twoModels is a configuration of two small models, snapshots off.
const twoModels = `[snapshot]
dir = "off"

[[models]]
name = "m1"
bin = "1h"
[[models.product]]
name = "a"
features = [0.0, 0.0]

[[models]]
name = "m2"
bin = "1h"
[[models.product]]
name = "b"
features = [0.0, 0.0]
`

// nopSink drops a runner's outputs.
type nopSink struct{}

func (nopSink) Publish(_, _ string, _ []byte, done func(error)) { done(nil) }
func (nopSink) Latest(string, []byte)                           {}
func (nopSink) Reject(string, []byte)                           {}

// movingSource is a daemon whose models come and go as leases move: it
// runs the models in owned, the others run on instance "b".
type movingSource struct {
	started chan struct{}
	all     []*stream.Runner
	mu      sync.Mutex
	owned   map[string]bool
}

func newMovingSource(t *testing.T) *movingSource {
	t.Helper()
	cfg, err := config.DecodeConfig([]byte(twoModels))
	if err != nil {
		t.Fatal(err)
	}
	s := &movingSource{started: make(chan struct{}), owned: map[string]bool{}}
	close(s.started)
	for _, m := range cfg.Models {
		r, err := stream.NewRunner(&cfg, m, nopSink{}, zerolog.Nop(), stream.NewMetrics(nil))
		if err != nil {
			t.Fatal(err)
		}
		s.all = append(s.all, r)
	}
	return s
}

func (s *movingSource) own(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owned[name] = on
}

func (s *movingSource) Started() <-chan struct{} { return s.started }

func (s *movingSource) Runners() []*stream.Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*stream.Runner
	for _, r := range s.all {
		if s.owned[r.Name()] {
			out = append(out, r)
		}
	}
	return out
}

func (s *movingSource) Runner(name string) *stream.Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.all {
		if r.Name() == name && s.owned[name] {
			return r
		}
	}
	return nil
}

func (s *movingSource) Models() []string { return []string{"m1", "m2"} }

func (s *movingSource) Where(_ context.Context, model string) string {
	if s.Runner(model) == nil {
		return "b"
	}
	return ""
}

// get fetches a page URL with a deadline: a hung handler fails the test
// instead of the run.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPageFollowsOwnership: a model this instance takes after the page
// started (a lease won in cluster mode) is listed and served, and requests
// keep being answered while models come and go (run with -race).
func TestPageFollowsOwnership(t *testing.T) {
	src := newMovingSource(t)
	mux := http.NewServeMux()
	Register(mux, src, Options{Log: zerolog.Nop()})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		if !t.Failed() { // Close waits for a hung handler forever
			srv.Close()
		}
	})

	if code, body := get(t, srv.URL+"/api/models"); code != http.StatusOK ||
		!strings.Contains(body, `"models":null`) || !strings.Contains(body, `"elsewhere":[{"model":"m1","instance":"b"},{"model":"m2","instance":"b"}]`) {
		t.Fatalf("nothing owned: /api/models = %d %s", code, body)
	}
	src.own("m1", true)
	if code, body := get(t, srv.URL+"/api/models/m1"); code != http.StatusOK || !strings.Contains(body, `"model":"m1"`) {
		t.Fatalf("m1 taken after the page started: /api/models/m1 = %d %s", code, body)
	}
	if code, body := get(t, srv.URL+"/api/models"); code != http.StatusOK ||
		!strings.Contains(body, `"models":[{"model":"m1","products":["a"]}]`) || !strings.Contains(body, `"elsewhere":[{"model":"m2","instance":"b"}]`) {
		t.Fatalf("m1 owned: /api/models = %d %s", code, body)
	}
	if code, body := get(t, srv.URL+"/api/models/m2"); code != http.StatusNotFound || !strings.Contains(body, "model m2 runs on instance b") {
		t.Fatalf("m2 elsewhere: /api/models/m2 = %d %s", code, body)
	}
	if code, body := get(t, srv.URL+"/api/models/nope"); code != http.StatusNotFound || !strings.Contains(body, "unknown model nope") {
		t.Fatalf("/api/models/nope = %d %s", code, body)
	}

	// Leases move while the page is read.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			src.own([]string{"m1", "m2"}[i%2], i%3 != 0)
			time.Sleep(time.Millisecond)
		}
	}()
	for range 200 {
		for _, path := range []string{"/api/models", "/api/models/m1", "/api/models/m2"} {
			if code, body := get(t, srv.URL+path); code != http.StatusOK && code != http.StatusNotFound {
				t.Fatalf("%s while leases move: %d %s", path, code, body)
			}
		}
	}
	close(stop)
	wg.Wait()
}
