package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/page"
	"github.com/dcgpd/dcgpd/stream/query"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// pageRun is a daemon that has replayed a simulated cluster with the
// operator's page recording, and every latent message it published.
type pageRun struct {
	r    *running
	c    *cluster
	base string
	col  *collector
	msgs []wire.LatentMessage
}

// replayForPage starts a daemon (re-smoothing every 48 bins), replays
// hubs × days of hourly bins and waits for the last bin's filtered
// estimate and every re-smooth. With live, the page's JSON is opened
// first (its recording then follows the replay live); otherwise the page
// first opens after the replay and reads it back from the streams.
func replayForPage(t *testing.T, hubs, days int, live bool) *pageRun {
	t.Helper()
	c := simulated(t, hubs, days)
	cfg := daemonConfig(t, c, 1)
	cfg.Models[0].Resmooth = config.ResmoothConfig{EveryBins: 48, Window: 72}
	r := startDaemon(t, cfg)
	p := &pageRun{r: r, c: c, base: "http://" + r.d.HTTPAddr()}
	var idx struct {
		Models []struct {
			Model    string   `json:"model"`
			Products []string `json:"products"`
		} `json:"models"`
		Build wire.Build `json:"build"`
	}
	if live {
		getJSON(t, p.base+"/api/models", &idx)
		if len(idx.Models) != 1 || idx.Models[0].Model != "cluster0" || len(idx.Models[0].Products) != hubs || idx.Build.Version == "" {
			t.Fatalf("/api/models = %+v", idx)
		}
	}
	col := collect(t, r.nc, "dcgp.latent.cluster0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := natsio.Replay(ctx, r.js, "cluster0", c.bins, natsio.ReplayOptions{Width: time.Hour, Watermark: true}); err != nil {
		t.Fatal(err)
	}
	last := c.bins[len(c.bins)-1].Start
	revisions := (len(c.bins) - 1) / 48
	p.col = col
	p.msgs = col.wait(t, "the last filtered bin and every re-smooth", 2*time.Minute, func(ms []wire.LatentMessage) bool {
		filtered, rev := false, 0
		for _, m := range ms {
			filtered = filtered || m.Kind == "filtered" && m.BinStart.Equal(last)
			rev = max(rev, m.Revision)
		}
		return filtered && rev >= revisions
	})
	return p
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

// pageModel polls the model's JSON until it agrees with every message the
// test's subscriber has seen (the two subscriptions run apart, and a
// last re-smooth may still be publishing).
func (p *pageRun) pageModel(t *testing.T) *page.Model {
	t.Helper()
	want := p.c.bins[len(p.c.bins)-1].Start
	deadline := time.Now().Add(30 * time.Second)
	for {
		var m page.Model
		getJSON(t, p.base+"/api/models/cluster0", &m)
		p.col.mu.Lock()
		p.msgs = append(p.msgs[:0], p.col.msgs...)
		p.col.mu.Unlock()
		bins := m.Products[0].Bins
		if n := len(bins); n > 0 && bins[n-1].BinStart.Equal(want) && bins[n-1].Filtered != nil && p.checkPage(nil, &m) == nil {
			return &m
		}
		if time.Now().After(deadline) {
			t.Fatalf("page did not catch up within 30s: %v", p.checkPage(nil, &m))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOperatorPageJSON: the page's JSON holds, for the newest PageBins
// bins, exactly the replayed observations and the published filtered,
// newest smoothed and forecast estimates; the page and its assets are
// served; the status reply and /metrics carry the build.
func TestOperatorPageJSON(t *testing.T) {
	p := replayForPage(t, 3, 10, true) // 240 bins: more than the page keeps
	m := p.pageModel(t)
	if err := p.checkPage(t, m); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/page.js", "/page.css"} {
		resp, err := http.Get(p.base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) < 500 || strings.Contains(string(body), "http://") && path == "/" {
			t.Errorf("GET %s: %s, %d bytes", path, resp.Status, len(body))
		}
	}
	if resp, err := http.Get(p.base + "/api/models/nope"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown model: %v %v", resp.Status, err)
	}
	checkBuildSurfaces(t, p)
}

// checkPage compares the page's JSON with the replay and the published
// messages; with t nil it only reports the first difference.
func (p *pageRun) checkPage(t *testing.T, m *page.Model) error {
	filtered, smoothed, rev := map[int64]*wire.LatentMessage{}, map[int64]*wire.LatentMessage{}, map[int64]int{}
	var newest *wire.LatentMessage
	for i := range p.msgs {
		lm := &p.msgs[i]
		k := lm.BinStart.Unix()
		if lm.Kind == "filtered" {
			filtered[k] = lm
			if newest == nil || lm.BinStart.After(newest.BinStart) {
				newest = lm
			}
		} else if lm.Revision >= rev[k] {
			smoothed[k], rev[k] = lm, lm.Revision
		}
	}
	bins := p.c.bins[len(p.c.bins)-page.Bins:]
	if len(m.Products) != len(p.c.names) || m.Status == nil || m.BinSeconds != 3600 {
		return fmt.Errorf("model: %d products, status %v, bin %v s", len(m.Products), m.Status, m.BinSeconds)
	}
	for i, prod := range m.Products {
		if prod.Product != p.c.names[i] || len(prod.Bins) != len(bins) {
			return fmt.Errorf("product %d: %s with %d bins, want %s with %d", i, prod.Product, len(prod.Bins), p.c.names[i], len(bins))
		}
		for j, b := range prod.Bins {
			if err := checkPoint(b, bins[j], i, filtered, smoothed); err != nil {
				return fmt.Errorf("%s: %w", prod.Product, err)
			}
		}
		if len(prod.Forecast) != len(newest.Forecasts) {
			return fmt.Errorf("%s: %d forecasts, want %d", prod.Product, len(prod.Forecast), len(newest.Forecasts))
		}
		for h, f := range newest.Forecasts {
			e, g := f.Estimates[i], prod.Forecast[h]
			if !g.BinStart.Equal(f.BinStart) || g.Mean != e.Mean || g.Q05 != e.Q05 || g.Q95 != e.Q95 {
				return fmt.Errorf("%s: forecast %d = %+v, published %+v", prod.Product, h, g, e)
			}
		}
	}
	return nil
}

func checkPoint(b page.Point, in natsio.ReplayBin, i int, filtered, smoothed map[int64]*wire.LatentMessage) error {
	if !b.BinStart.Equal(in.Start) {
		return fmt.Errorf("bin %v, want %v", b.BinStart, in.Start)
	}
	var o *wire.Observation
	for k := range in.Observations {
		if in.Observations[k].Product == filtered[in.Start.Unix()].Estimates[i].Product {
			o = &in.Observations[k]
		}
	}
	switch {
	case o == nil || o.Demand == nil:
		if b.Demand != nil {
			return fmt.Errorf("%v: demand %v where none was observed", b.BinStart, *b.Demand)
		}
	case b.Demand == nil || *b.Demand != *o.Demand:
		return fmt.Errorf("%v: demand %v, replayed %v", b.BinStart, b.Demand, *o.Demand)
	}
	f := filtered[in.Start.Unix()]
	if f == nil || b.Filtered == nil {
		return fmt.Errorf("%v: filtered %v on the page, %v published", b.BinStart, b.Filtered, f)
	}
	e := f.Estimates[i]
	if b.Filtered.Mean != e.Mean || b.Filtered.Q05 != e.Q05 || b.Filtered.Q95 != e.Q95 || b.Censored != e.Censored {
		return fmt.Errorf("%v: page %+v censored %v, published %+v", b.BinStart, *b.Filtered, b.Censored, e)
	}
	s := smoothed[in.Start.Unix()]
	switch {
	case s == nil && b.Smoothed != nil:
		return fmt.Errorf("%v: smoothed on the page, none published", b.BinStart)
	case s != nil && (b.Smoothed == nil || b.Revision != s.Revision || b.Smoothed.Mean != s.Estimates[i].Mean || b.Smoothed.Q95 != s.Estimates[i].Q95):
		return fmt.Errorf("%v: smoothed %+v revision %d, newest published revision %d", b.BinStart, b.Smoothed, b.Revision, s.Revision)
	}
	return nil
}

// checkBuildSurfaces: the status reply carries "build" beside the old
// fields, and /metrics has dcgpd_build_info with the same labels.
func checkBuildSurfaces(t *testing.T, p *pageRun) {
	q, _ := json.Marshal(query.Query{Model: "cluster0"})
	msg, err := p.r.nc.Request(query.StatusSubject, q, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var st query.StatusReply
	if err := json.Unmarshal(msg.Data, &st); err != nil || st.Model != "cluster0" || st.Bins != int64(len(p.c.bins)) {
		t.Fatalf("status reply %s: %v", msg.Data, err)
	}
	b := wire.ReadBuild()
	if st.Build != b {
		t.Errorf("status build %+v, want %+v", st.Build, b)
	}
	resp, err := http.Get(p.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf(`dcgpd_build_info{go_version=%q,revision=%q,version=%q} 1`, b.GoVersion, b.Revision, b.Version)
	if !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

const chromium = "/usr/bin/chromium"

// TestOperatorPageBrowser opens the page after a replay (so it reads the
// replay back from the streams), checks its JSON as TestOperatorPageJSON
// does, loads the page in headless Chromium and checks
// that it drew every product with its observations, censored marks,
// filtered and smoothed lines and forecast fan. It skips where Chromium
// is not installed. DCGPD_PAGE_SCREENSHOT=FILE also saves a screenshot.
func TestOperatorPageBrowser(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("SKIPPED: %s is not installed (apt-get install chromium), so the page is not tested in a browser", chromium)
	}
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: starts a daemon and a browser")
	}
	p := replayForPage(t, 4, 8, false)
	p.pageModel(t) // the page opens after the replay: read back from the streams
	dom := runChromium(t, p.base+"/", "--dump-dom")
	checks := []struct {
		what string
		n    int
		min  int
	}{
		{"<svg", strings.Count(dom, "<svg"), len(p.c.names)},
		{`class="obs"`, strings.Count(dom, `class="obs"`), 100},
		{`class="cens"`, strings.Count(dom, `class="cens"`), 1},
		{`class="filt" d="M`, strings.Count(dom, `class="filt" d="M`), len(p.c.names)},
		{`class="smooth" d="M`, strings.Count(dom, `class="smooth" d="M`), len(p.c.names)},
		{`class="fc-band" d="M`, strings.Count(dom, `class="fc-band" d="M`), len(p.c.names)},
		{`data-bins="168"`, strings.Count(dom, `data-bins="168"`), 1},
	}
	for _, c := range checks {
		if c.n < c.min {
			t.Errorf("page DOM has %d of %s, want at least %d", c.n, c.what, c.min)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
	shot := os.Getenv("DCGPD_PAGE_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "page.png")
	}
	abs, _ := filepath.Abs(shot)
	runChromium(t, p.base+"/", "--screenshot="+abs, "--window-size=1280,690", "--hide-scrollbars")
	if fi, err := os.Stat(abs); err != nil || fi.Size() < 10_000 {
		t.Errorf("screenshot %s: %v", abs, err)
	}
}

// runChromium runs headless Chromium on url with a fresh profile, letting
// the page's scripts run for 5 s of virtual time, and returns its stdout.
func runChromium(t *testing.T, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=5000"}
	cmd := exec.CommandContext(ctx, chromium, append(append(base, args...), url)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return string(out)
}
