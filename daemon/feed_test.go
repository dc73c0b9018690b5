package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// recordedFeed serves the recorded GBFS 2.3 feed of testdata/gbfs-feed:
// the k-th request of station_status gets snapshot min(k, last), stamped
// (last_updated and every last_reported) at the wall clock's second, one
// second after the previous stamp at least, so that every snapshot
// served is a new one to the poller. It records what it served.
type recordedFeed struct {
	dir   string
	snaps []string
	mu    sync.Mutex
	log   []servedSnapshot
}

type servedSnapshot struct {
	index int
	at    time.Time
}

func newRecordedFeed(t *testing.T) *recordedFeed {
	t.Helper()
	f := &recordedFeed{dir: filepath.Join("testdata", "gbfs-feed")}
	names, err := filepath.Glob(filepath.Join(f.dir, "station_status", "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("recorded snapshots: %v (%d)", err, len(names))
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		f.snaps = append(f.snaps, string(b))
	}
	return f
}

func (f *recordedFeed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now().Truncate(time.Second)
	var body string
	switch r.URL.Path {
	case "/gbfs.json", "/station_information.json":
		b, err := os.ReadFile(filepath.Join(f.dir, strings.TrimPrefix(r.URL.Path, "/")))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		body = string(b)
	case "/station_status.json":
		f.mu.Lock()
		k := min(len(f.log), len(f.snaps)-1)
		if n := len(f.log); n > 0 && !now.After(f.log[n-1].at) {
			now = f.log[n-1].at.Add(time.Second)
		}
		f.log = append(f.log, servedSnapshot{index: k, at: now})
		body = f.snaps[k]
		f.mu.Unlock()
	default:
		http.NotFound(w, r)
		return
	}
	body = strings.ReplaceAll(body, "{{BASE}}", "http://"+r.Host)
	body = strings.ReplaceAll(body, "{{NOW}}", strconv.FormatInt(now.Unix(), 10))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(body))
}

func (f *recordedFeed) served() []servedSnapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]servedSnapshot(nil), f.log...)
}

// feedStation is one station of the recorded feed.
type feedStation struct {
	ID       string  `json:"station_id"`
	Name     string  `json:"name"`
	Capacity int     `json:"capacity"`
	Bikes    int     `json:"num_bikes_available"`
	Docks    int     `json:"num_docks_available"`
	Lat      float64 `json:"lat"`
}

// stations reads a recorded file's data.stations.
func (f *recordedFeed) stations(t *testing.T, body string) map[string]feedStation {
	t.Helper()
	var v struct {
		Data struct {
			Stations []feedStation `json:"stations"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(body, "{{NOW}}", "0")), &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]feedStation{}
	for _, s := range v.Data.Stations {
		out[s.ID] = s
	}
	return out
}

// serveConfig is examples/gbfs/dcgpd.toml, the quick start's
// configuration, with the feed's URL and this test's folders and ports.
func serveConfig(t *testing.T, url string) string {
	t.Helper()
	example, err := filepath.Abs(filepath.Join("..", "examples", "gbfs"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(example, "dcgpd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := string(b)
	for _, r := range [][2]string{
		{`gbfs_url = "http://127.0.0.1:8080/gbfs.json"`, fmt.Sprintf("gbfs_url = %q", url)},
		{`store_dir = "dcgpd-data/gbfs/jetstream"`, fmt.Sprintf("store_dir = %q\nlisten = \"127.0.0.1:-1\"\n[http]\nlisten = \"127.0.0.1:0\"", filepath.Join(dir, "js"))},
		{`dir = "dcgpd-data/gbfs/snapshots"`, fmt.Sprintf("dir = %q", filepath.Join(dir, "snap"))},
		{`stations_file = "dcgpd-data/gbfs/demo.stations.csv"`, fmt.Sprintf("stations_file = %q", filepath.Join(dir, "stations.csv"))},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("%q not in examples/gbfs/dcgpd.toml", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	s = strings.ReplaceAll(s, `model_file = "flows.model.toml"`, fmt.Sprintf("model_file = %q", filepath.Join(example, "flows.model.toml")))
	path := filepath.Join(dir, "dcgpd.toml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// syncBuffer is a log sink safe for the daemon's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// flowBinStart is the start of the statusflow bin (start, start+w]
// holding t, on the grid from the Unix epoch.
func flowBinStart(t time.Time, w time.Duration) time.Time {
	k := (t.Unix()*int64(time.Second) + int64(w) - 1) / int64(w)
	return time.Unix(0, (k-1)*int64(w)).UTC()
}

// TestServeFromGBFSURL is issue 35's must-show: `dcgpd serve` with the
// quick start's configuration and only a GBFS URL (a local server
// replaying a recorded feed whose bikes leave and arrive between polls)
// ranks the stations' moves on /api/risk within one bin of the first
// poll plus the flows' lag and slack. Until then /api/risk says what it
// waits for. Checked against the feed: the stations and their names,
// bikes and capacity as of the bin's end, move = s* − bikes, and each
// derived pickup and return count against the recorded snapshots the
// server handed out (net change per poll interval, in the bin of the
// later poll; the first bin, partly covered, censored at its count, its
// zeros not sent).
// (A first poll on a bin's start leaves that bin fully covered; the
// checks follow the served times.)
func TestServeFromGBFSURL(t *testing.T) {
	feed := newRecordedFeed(t)
	srv := httptest.NewServer(feed)
	defer srv.Close()
	cfg, err := config.LoadConfig(serveConfig(t, srv.URL+"/gbfs.json"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	d, err := New(cfg, zerolog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	select {
	case <-d.Started():
	case err := <-done:
		t.Fatalf("daemon stopped: %v\n%s", err, logs.String())
	case <-ctx.Done():
		t.Fatal("daemon did not start")
	}
	obs := collectObs(t, d.NATSURL())
	width := cfg.Models[0].Bin.Duration
	lag := max(cfg.Rebalance[0].FlowMaxGap.Duration, cfg.Rebalance[0].FlowTruckWindow.Duration)
	view, waited := waitRanking(t, d, width, lag, feed)
	checkRanking(t, feed, view)
	checkDerived(t, feed, obs.got(), view, width, lag)
	checkFeedMetrics(t, d)
	if !strings.Contains(logs.String(), "got the pooled prior mean") {
		t.Errorf("no pooled-prior log line")
	}
	for _, e := range view.Stations {
		t.Logf("%-8s %-26s %2d/%2d move %+d by %v urgency %.2f urgent %v P(empty) %.2f P(full) %.2f", e.Station, e.Name, e.Bikes, e.Capacity, e.Move, e.By, e.Urgency, e.Urgent, e.Empty, e.Full)
	}
	for model, msgs := range obs.got() {
		for _, m := range msgs {
			if m.BinStart != nil {
				b, _ := json.Marshal(m.Observations)
				t.Logf("%s %s %s", model, m.BinStart.Format(time.TimeOnly), b)
			}
		}
	}
	t.Logf("first ranking as of %s, %d waiting answers before it: %v", view.BinEnd.Format(time.TimeOnly), len(waited), waited)
}

// waitRanking polls /api/risk until the system has a ranking; every
// answer before it must say what it waits for. The ranking must come by
// one bin after the first poll, plus the flows' lag, two polls and 4 s
// of slack (a loaded machine).
func waitRanking(t *testing.T, d *Daemon, width, lag time.Duration, feed *recordedFeed) (RiskView, []string) {
	t.Helper()
	var waited []string
	for start := time.Now(); time.Since(start) < 45*time.Second; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get("http://" + d.HTTPAddr() + "/api/risk")
		if err != nil {
			t.Fatal(err)
		}
		var views []RiskView
		err = json.NewDecoder(resp.Body).Decode(&views)
		resp.Body.Close()
		if err != nil || len(views) != 1 {
			t.Fatalf("/api/risk: %v, %d systems", err, len(views))
		}
		v := views[0]
		if v.BinEnd == nil {
			if !strings.HasPrefix(v.Waiting, "waiting for the first station_status from http://") && !strings.HasPrefix(v.Waiting, "first bin closes at ") {
				t.Fatalf("before the first ranking /api/risk says %q", v.Waiting)
			}
			if len(waited) == 0 || waited[len(waited)-1] != v.Waiting {
				waited = append(waited, v.Waiting)
			}
			continue
		}
		served := feed.served()
		if len(served) == 0 {
			t.Fatal("a ranking without a poll")
		}
		first := served[0].at
		deadline := first.Add(width + lag + 2*time.Second + 4*time.Second)
		if time.Now().After(deadline) {
			t.Errorf("first ranking at %s, after %s (first poll %s, bin %v, lag %v, 2 polls, 4 s slack)",
				time.Now().Format(time.TimeOnly), deadline.Format(time.TimeOnly), first.Format(time.TimeOnly), width, lag)
		}
		if v.Waiting != "" {
			t.Errorf("ranking shown with waiting %q", v.Waiting)
		}
		return v, waited
	}
	t.Fatal("no ranking within 45 s")
	return RiskView{}, nil
}

// checkRanking compares the ranking with the recorded feed: every
// station, usable, with its name, capacity and the bikes of the newest
// snapshot served at or before the bin's end; move = s* − bikes; urgent
// stations first.
func checkRanking(t *testing.T, feed *recordedFeed, v RiskView) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(feed.dir, "station_information.json"))
	if err != nil {
		t.Fatal(err)
	}
	info := feed.stations(t, string(b))
	var asOf servedSnapshot
	for _, s := range feed.served() {
		if !s.at.After(*v.BinEnd) {
			asOf = s
		}
	}
	status := feed.stations(t, feed.snaps[asOf.index])
	if len(v.Stations) != len(info) {
		t.Fatalf("%d stations ranked, want the feed's %d", len(v.Stations), len(info))
	}
	sawCalm := false
	for i, e := range v.Stations {
		want := info[e.Station]
		switch {
		case e.Status != "ok":
			t.Errorf("%s: status %s (%s)", e.Station, e.Status, e.Detail)
		case e.Name != want.Name || e.Capacity != want.Capacity || e.Bikes != status[e.Station].Bikes:
			t.Errorf("%s: %q, %d bikes of %d; want %q, %d of %d (snapshot %d)", e.Station, e.Name, e.Bikes, e.Capacity,
				want.Name, status[e.Station].Bikes, want.Capacity, asOf.index)
		case e.Move != e.Best-e.Bikes:
			t.Errorf("%s: move %d, s* %d, bikes %d", e.Station, e.Move, e.Best, e.Bikes)
		case !(e.Empty >= 0 && e.Empty <= 1 && e.Full >= 0 && e.Full <= 1):
			t.Errorf("%s: P(empty) %v, P(full) %v", e.Station, e.Empty, e.Full)
		case e.Urgent && sawCalm:
			t.Errorf("urgent %s (row %d) after a station that is not", e.Station, i)
		}
		sawCalm = sawCalm || !e.Urgent
	}
}

// obsLog gathers the models' input messages.
type obsLog struct {
	mu   sync.Mutex
	msgs map[string][]wire.ObsMessage // by model
}

func (l *obsLog) got() map[string][]wire.ObsMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]wire.ObsMessage{}
	for k, v := range l.msgs {
		out[k] = append([]wire.ObsMessage(nil), v...)
	}
	return out
}

func collectObs(t *testing.T, url string) *obsLog {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	l := &obsLog{msgs: map[string][]wire.ObsMessage{}}
	_, err = nc.Subscribe("dcgp.obs.*", func(m *nats.Msg) {
		var o wire.ObsMessage
		if err := json.Unmarshal(m.Data, &o); err != nil {
			t.Errorf("%s: %v", m.Subject, err)
			return
		}
		l.mu.Lock()
		l.msgs[o.Model] = append(l.msgs[o.Model], o)
		l.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return l
}

// checkDerived recomputes each bin's pickups and returns from the
// snapshots the server handed out, in order: per poll interval no
// longer than the flows' max gap, the net decrease (pickups) or
// increase (returns) of each station's bikes, counted in the bin
// (start, end] that holds the later poll. Every observation message the
// models received must match, the ranked bin must be among them, and
// the first bin (partly covered by polls) is censored at its count.
func checkDerived(t *testing.T, feed *recordedFeed, got map[string][]wire.ObsMessage, v RiskView, width, maxGap time.Duration) {
	t.Helper()
	served := feed.served()
	want := map[string]map[time.Time]map[string]float64{"pickups": {}, "returns": {}}
	for i := 1; i < len(served); i++ {
		if served[i].at.Sub(served[i-1].at) > maxGap {
			continue
		}
		start := flowBinStart(served[i].at, width)
		prev, cur := feed.stations(t, feed.snaps[served[i-1].index]), feed.stations(t, feed.snaps[served[i].index])
		for id, s := range cur {
			for model, n := range map[string]int{"pickups": max(prev[id].Bikes-s.Bikes, 0), "returns": max(s.Bikes-prev[id].Bikes, 0)} {
				if want[model][start] == nil {
					want[model][start] = map[string]float64{}
				}
				want[model][start][id] += float64(n)
			}
		}
	}
	first := flowBinStart(served[0].at, width)
	for _, model := range []string{"pickups", "returns"} {
		ranked, bins := false, 0
		for _, m := range got[model] {
			if m.BinStart == nil {
				continue // a watermark
			}
			bins++
			ranked = ranked || m.BinStart.Equal(*v.BinStart)
			for _, o := range m.Observations {
				w := want[model][*m.BinStart][o.Product]
				if o.Demand == nil || *o.Demand != w {
					t.Errorf("%s bin %s station %s: derived %v, want %v", model, m.BinStart.Format(time.TimeOnly), o.Product, o.Demand, w)
				}
				censored := o.Censored != nil && *o.Censored && o.Supply != nil && *o.Supply == *o.Demand
				if m.BinStart.Equal(first) && (!censored || *o.Demand == 0) {
					t.Errorf("%s first bin %s station %s: not censored at its count, or 0 censored sent (%+v)", model, first.Format(time.TimeOnly), o.Product, o)
				}
			}
		}
		if !ranked || bins == 0 {
			t.Errorf("%s: %d bins received, the ranked bin %s among them: %v", model, bins, v.BinStart.Format(time.TimeOnly), ranked)
		}
	}
}

// checkFeedMetrics: the first bin's six stations are counted sent
// (censored from below where the first poll fell inside the bin, as
// counts where it fell on its start); nothing was refused or unsent.
func checkFeedMetrics(t *testing.T, d *Daemon) {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	text := string(b)
	sent := 0.0
	for _, l := range strings.Split(text, "\n") {
		for _, outcome := range []string{"censored_below", "observed"} {
			if rest, ok := strings.CutPrefix(l, `dcgpd_feed_flow_bins_total{name="demo",outcome="`+outcome+`"} `); ok {
				v, _ := strconv.ParseFloat(rest, 64)
				sent += v
			}
		}
	}
	if sent < 6 || strings.Contains(text, "dcgpd_feed_flow_samples_refused_total{") || strings.Contains(text, "dcgpd_feed_flow_unsent_total{") {
		t.Errorf("feed metrics: %v station-bins sent (want >= 6), refused or unsent present", sent)
	}
}

// serveRun runs the daemon of the configuration at path until stop.
func serveRun(t *testing.T, path string) (d *Daemon, logs *syncBuffer, stop func()) {
	t.Helper()
	cfg, err := config.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	logs = &syncBuffer{}
	d, err = New(cfg, zerolog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}
	select {
	case <-d.Started():
	case err := <-done:
		cancel()
		t.Fatalf("daemon stopped: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		stop()
		t.Fatal("daemon did not start")
	}
	return d, logs, stop
}

// TestServeFromGBFSURLRestart: a second start serves the stations kept
// in stations_file (the models match their snapshots), derives afresh
// and ranks a later bin, with nothing of the derived input refused.
func TestServeFromGBFSURLRestart(t *testing.T) {
	feed := newRecordedFeed(t)
	srv := httptest.NewServer(feed)
	defer srv.Close()
	path := serveConfig(t, srv.URL+"/gbfs.json")
	d, _, stop := serveRun(t, path)
	first, _ := waitRanking(t, d, 5*time.Second, 3*time.Second, feed)
	stop()
	d, logs, stop := serveRun(t, path)
	defer stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v := d.RiskIndex()[0]
		if v.BinEnd != nil && v.BinEnd.After(*first.BinEnd) && len(v.Stations) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no later ranking after the restart: %+v\n%s", v, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	text := logs.String()
	if !strings.Contains(text, "serving the stations kept from the first start") || !strings.Contains(text, "restored from snapshot") {
		t.Errorf("second start did not reuse the stations file and snapshots:\n%s", text)
	}
	resp, err := http.Get("http://" + d.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "dcgpd_observations_rejected_total{") && !strings.HasSuffix(l, " 0") {
			t.Errorf("derived input refused after the restart: %s", l)
		}
	}
}
