package gbfs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// feedServer serves testdata's recorded feeds ({{BASE}} replaced by its
// own URL), with per-path overrides: another file, an HTTP status, a
// delay.
type feedServer struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string]string // path -> testdata file
	statuses map[string]int
	delays   map[string]time.Duration
	headers  map[string]http.Header // extra response headers by path
	hits     map[string]int
}

func newFeedServer(t *testing.T) *feedServer {
	t.Helper()
	fs := &feedServer{files: map[string]string{}, statuses: map[string]int{}, delays: map[string]time.Duration{}, headers: map[string]http.Header{}, hits: map[string]int{}}
	fs.Server = httptest.NewServer(http.HandlerFunc(fs.serve))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *feedServer) serve(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	file, ok := fs.files[r.URL.Path]
	if !ok {
		file = filepath.Join("testdata", filepath.FromSlash(strings.TrimPrefix(r.URL.Path, "/")))
	}
	status, delay := fs.statuses[r.URL.Path], fs.delays[r.URL.Path]
	for k, v := range fs.headers[r.URL.Path] {
		w.Header()[k] = v
	}
	fs.hits[r.URL.Path]++
	fs.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		http.Error(w, "injected failure", status)
		return
	}
	data, err := os.ReadFile(file)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(strings.ReplaceAll(string(data), "{{BASE}}", fs.URL)))
}

// set serves file at path (a testdata-relative name), a status or a delay.
func (fs *feedServer) set(path, file string, status int, delay time.Duration) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if file != "" {
		fs.files[path] = filepath.Join("testdata", file)
	} else {
		delete(fs.files, path)
	}
	fs.statuses[path], fs.delays[path] = status, delay
}

// setHeader adds a response header at path ("" value: none).
func (fs *feedServer) setHeader(path, key, value string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	h := http.Header{}
	if value != "" {
		h.Set(key, value)
	}
	fs.headers[path] = h
}

func (fs *feedServer) hitCount(path string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.hits[path]
}

// memPublisher is an in-memory Publisher that can be made to fail.
type memPublisher struct {
	mu   sync.Mutex
	fail error
	msgs []published
}

type published struct {
	subject, id string
	data        []byte
}

func (m *memPublisher) Publish(_ context.Context, subject, id string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.msgs = append(m.msgs, published{subject, id, append([]byte(nil), data...)})
	return nil
}

// decoded returns every published message, decoded by the daemon's
// decoder (a message it would refuse fails the test).
func (m *memPublisher) decoded(t *testing.T) []*stationstatus.Message {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*stationstatus.Message
	for _, p := range m.msgs {
		msg, err := stationstatus.Decode(p.data)
		if err != nil {
			t.Fatalf("published message %s refused by the daemon's decoder: %v\n%s", p.id, err, p.data)
		}
		out = append(out, msg)
	}
	return out
}

// fixedClock is a settable clock.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fixedClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// newTestPoller polls fs's feed under version ("v2.3" or "v3.0") with the
// clock at 08:01:00Z on 2024-05-06, 30 s after the recorded snapshots.
func newTestPoller(t *testing.T, fs *feedServer, version string, pub Publisher) (*Poller, *fixedClock, *Metrics) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.URL = fs.URL + "/" + version + "/gbfs.json"
	cfg.Feed = "testbikes"
	cfg.Timeout = 200 * time.Millisecond
	clock := &fixedClock{t: time.Date(2024, 5, 6, 8, 1, 0, 0, time.UTC)}
	met := NewMetrics(nil)
	p, err := NewPoller(cfg, pub, met, zerolog.New(zerolog.NewTestWriter(t)), WithClock(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	return p, clock, met
}
