package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
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
	"github.com/dcgpd/dcgpd/daemon"
	"github.com/dcgpd/dcgpd/stream/gbfs"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/rebalance"
	"github.com/dcgpd/dcgpd/stream/stationstatus"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// rebalanceConfig is a daemon with two models (pickups, returns) over a
// simulated cluster's hubs, forecasting horizon bins, joined by a
// [[rebalance]] entry "city".
func rebalanceConfig(t *testing.T, hubs, horizon int) (config.Config, []string) {
	c := simulated(t, hubs, 1)
	cfg := daemonConfig(t, c, 2)
	cfg.Models[0].Name, cfg.Models[1].Name = "pickups", "returns"
	for i := range cfg.Models {
		cfg.Models[i].Horizon = horizon
		cfg.Models[i].Resmooth.EveryBins = 0
	}
	cfg.Rebalance = []config.RebalanceConfig{{Name: "city", Pickups: "pickups", Returns: "returns", PlanningBins: horizon}}
	return cfg, c.names
}

// gather keeps every message on a subject.
type gather struct {
	mu   sync.Mutex
	msgs []*nats.Msg
}

func gatherOn(t *testing.T, nc *nats.Conn, subject string) *gather {
	g := &gather{}
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		g.mu.Lock()
		g.msgs = append(g.msgs, m)
		g.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *gather) waitFor(t *testing.T, what string, n int) []*nats.Msg {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		g.mu.Lock()
		msgs := append([]*nats.Msg(nil), g.msgs...)
		g.mu.Unlock()
		if len(msgs) >= n {
			return msgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d %s (got %d)", n, what, len(msgs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRebalanceEndToEnd feeds a daemon station status (good and bad) and
// both flows' bins through an embedded NATS and checks: the status
// censors the bins it covers (station 0 empty in bins 2-3: pickups
// censored; station 1 full in bin 3: returns censored), every bad status
// message is refused with its reason while everything else flows (every
// bin of both models published, every observation in it), a risk message
// per bin with each station's inventory as of the bin's end (the sample
// at that instant), the bucket entries and the page's ranked list.
func TestRebalanceEndToEnd(t *testing.T) {
	cfg, names := rebalanceConfig(t, 4, 6)
	r := startDaemon(t, cfg)
	pick := collect(t, r.nc, "dcgp.latent.pickups")
	ret := collect(t, r.nc, "dcgp.latent.returns")
	risks := gatherOn(t, r.nc, "dcgp.risk.city")
	rejected := gatherOn(t, r.nc, "dcgp.rejected.city")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const bins = 8
	publishStatus := func(data []byte) {
		t.Helper()
		if _, err := r.js.Publish(ctx, "dcgp.status.city", data); err != nil {
			t.Fatal(err)
		}
	}
	inventory := func(bin, station int) (bikes, docks int) {
		switch {
		case station == 0 && (bin == 2 || bin == 3):
			return 0, 10
		case station == 1 && bin == 3:
			return 10, 0
		}
		return 5, 5
	}
	// Each bin: its status (good, and bad in bin 4), then, once the daemon
	// has taken the status in, both flows' observations (3 trips at every
	// station, nothing censored by the sender). Live, a bin closes after
	// the status that covers it has arrived; a replay keeps that order.
	kept := 0
	for b := range bins {
		// Samples every 20 minutes up to and including the bin's end.
		minutes := []int{20, 40, 60}
		if b == 0 {
			minutes = []int{0, 20, 40, 60}
		}
		for _, minute := range minutes {
			at := origin.Add(time.Duration(b)*time.Hour + time.Duration(minute)*time.Minute)
			m := stationstatus.Message{Schema: 1, Feed: "city", At: at}
			for s, name := range names {
				bikes, docks := inventory(b+minute/60, s)
				c := 12
				m.Stations = append(m.Stations, stationstatus.Sample{Station: name, Capacity: &c, BikesAvailable: bikes, DocksAvailable: &docks,
					BikesDisabled: 1, Installed: true, Renting: true, Returning: true, LastReported: at.Add(-time.Minute)})
			}
			// A station no model has is ignored, not refused.
			m.Stations = append(m.Stations, stationstatus.Sample{Station: "elsewhere", BikesAvailable: 1, Installed: true, Renting: true, Returning: true, LastReported: at})
			data, err := stationstatus.Encode(&m)
			if err != nil {
				t.Fatal(err)
			}
			publishStatus(data)
			kept += len(names)
		}
		if b == 4 { // bad status between good ones
			for _, bad := range []string{
				`{"schema": 1, "feed": "city", "at": "2024-01-01T04:30:00Z", "stations": [`,
				`{"schema": 2, "feed": "city", "at": "2024-01-01T04:30:00Z", "stations": []}`,
				fmt.Sprintf(`{"schema": 1, "feed": "city", "at": "2024-01-01T04:30:00Z", "stations": [{"station": %q, "capacity": 10, "bikes_available": 9, "docks_available": 9, "is_installed": true, "is_renting": true, "is_returning": true, "last_reported": "2024-01-01T04:29:00Z"}]}`, names[2]),
				`{"schema": 1, "feed": "other", "at": "2024-01-01T04:30:00Z", "stations": [{"station": "x", "bikes_available": 1, "is_installed": true, "is_renting": true, "is_returning": true, "last_reported": "2024-01-01T04:29:00Z"}]}`,
			} {
				publishStatus([]byte(bad))
			}
		}
		waitMetric(t, r.d.HTTPAddr(), `dcgpd_rebalance_status_samples_total{name="city",outcome="kept"}`, float64(kept))
		rb := natsio.ReplayBin{Start: origin.Add(time.Duration(b) * time.Hour)}
		for _, n := range names {
			y := 3.0
			rb.Observations = append(rb.Observations, wire.Observation{Product: n, Demand: &y})
		}
		for _, model := range []string{"pickups", "returns"} {
			if _, err := natsio.Replay(ctx, r.js, model, []natsio.ReplayBin{rb}, natsio.ReplayOptions{Width: time.Hour, Watermark: b == bins-1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	full := func(ms []wire.LatentMessage) bool { return count(wire.KindFiltered)(ms) >= bins }
	censored := map[string]map[int][]bool{}
	for model, col := range map[string]*collector{"pickups": pick, "returns": ret} {
		censored[model] = map[int][]bool{}
		for _, m := range col.wait(t, model+" bins", 60*time.Second, full) {
			if m.Kind != wire.KindFiltered {
				continue
			}
			b := int(m.BinStart.Sub(origin) / time.Hour)
			for _, e := range m.Estimates {
				if !e.Observed {
					t.Fatalf("%s bin %d: %s not observed: an accepted observation was lost", model, b, e.Product)
				}
				censored[model][b] = append(censored[model][b], e.Censored)
			}
		}
	}
	for b := range bins {
		for s := range names {
			wantP := s == 0 && (b == 2 || b == 3)
			wantR := s == 1 && b == 3
			if censored["pickups"][b][s] != wantP || censored["returns"][b][s] != wantR {
				t.Errorf("bin %d station %d: censored pickups %v returns %v, want %v %v", b, s, censored["pickups"][b][s], censored["returns"][b][s], wantP, wantR)
			}
		}
	}
	// Every bad status message refused with its reason.
	wantReasons := map[string]int{wire.ReasonMalformed: 1, wire.ReasonSchema: 1, stationstatus.ReasonValue: 1, wire.ReasonModel: 1}
	got := map[string]int{}
	for _, m := range rejected.waitFor(t, "rejections", 4) {
		var rm wire.RejectionMessage
		if err := json.Unmarshal(m.Data, &rm); err != nil || rm.Model != "city" {
			t.Fatalf("rejection %s: %v", m.Data, err)
		}
		got[rm.Reason]++
	}
	for reason, n := range wantReasons {
		if got[reason] != n {
			t.Errorf("rejections %v, want %v", got, wantReasons)
			break
		}
	}
	// One risk message per bin (the stations fit one part), ranked, with
	// the inventory as of each bin's end.
	byBin := map[int]rebalance.RiskMessage{}
	for _, m := range risks.waitFor(t, "risk messages", bins) {
		var rm rebalance.RiskMessage
		if err := json.Unmarshal(m.Data, &rm); err != nil {
			t.Fatal(err)
		}
		byBin[int(rm.BinStart.Sub(origin)/time.Hour)] = rm
	}
	if len(byBin) != bins {
		t.Fatalf("risk for %d bins, want %d", len(byBin), bins)
	}
	for b, rm := range byBin {
		if rm.Horizon != 6 || rm.PlanningBins != 6 || rm.Parts != 1 || len(rm.Stations) != len(names) {
			t.Fatalf("bin %d: horizon %d, planning %d, parts %d, %d stations", b, rm.Horizon, rm.PlanningBins, rm.Parts, len(rm.Stations))
		}
		for i, s := range rm.Stations {
			idx := -1
			for k, n := range names {
				if n == s.Station {
					idx = k
				}
			}
			// The inventory as of the bin's end: the sample at that instant.
			bikes, docks := inventory(b+1, idx)
			if s.Status != rebalance.StatusOK || s.Bikes != bikes || s.Capacity != bikes+docks || len(s.UDF) != bikes+docks+1 || len(s.EmptyWithin) != 6 {
				t.Fatalf("bin %d %s: %+v, want ok with %d bikes of %d", b, s.Station, s, bikes, bikes+docks)
			}
			if i > 0 && s.Score > rm.Stations[i-1].Score {
				t.Fatalf("bin %d: not ranked by score", b)
			}
		}
	}
	// At bin 2's end station 0 is empty and station 1 full.
	if s := byBin[2].Stations; s[0].Station != names[0] && s[0].Station != names[1] {
		t.Errorf("bin 2: the empty or the full station should rank first, got %s", s[0].Station)
	}
	for _, s := range byBin[2].Stations {
		if s.Station == names[0] && math.Abs(s.EmptyWithin[0]-1) > 1e-12 {
			t.Errorf("an empty station's P(empty within 1 bin) = %v, want 1", s.EmptyWithin[0])
		}
	}
	// The bucket holds each station's newest entry.
	kv, err := r.js.KeyValue(ctx, "dcgp_risk")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, err := kv.Get(ctx, rebalance.Key("city", names[0]))
		var entry rebalance.Entry
		if err == nil && json.Unmarshal(e.Value(), &entry) == nil && entry.BinStart.Equal(origin.Add((bins-1)*time.Hour)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bucket entry of %s for the last bin not found: %v", names[0], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The page lists the system's stations, ranked.
	resp, err := http.Get("http://" + r.d.HTTPAddr() + "/api/risk")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var views []daemon.RiskView
	if err := json.NewDecoder(resp.Body).Decode(&views); err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Name != "city" || len(views[0].Stations) != len(names) || views[0].Statuses[rebalance.StatusOK] != len(names) {
		t.Fatalf("page view %+v", views)
	}
	for _, v := range views[0].Stations {
		if v.Status != rebalance.StatusOK || v.Capacity != 10 || v.Empty < 0 || v.Empty > 1 || v.Full < 0 || v.Full > 1 {
			t.Fatalf("page line %+v", v)
		}
	}
	for path, want := range map[string]string{"/": `id="risk"`, "/page.js": "api/risk"} {
		resp, err := http.Get("http://" + r.d.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want) {
			t.Errorf("%s does not contain %q", path, want)
		}
	}
}

// waitMetric waits until the daemon's /metrics shows series at value.
func waitMetric(t testing.TB, addr, series string, value float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := "absent"
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, line := range strings.Split(string(body), "\n") {
				if v, ok := strings.CutPrefix(line, series+" "); ok {
					last = v
					if f, err := strconv.ParseFloat(v, 64); err == nil && f == value {
						return
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: %s, want %v", series, last, value)
}

// TestRebalanceStatusSurvivesRestart: status accepted before a restart
// is read back from the stream, so the first bin after the restart is
// censored by it and its risk starts from it.
func TestRebalanceStatusSurvivesRestart(t *testing.T) {
	cfg, names := rebalanceConfig(t, 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := func(b int) natsio.ReplayBin {
		rb := natsio.ReplayBin{Start: origin.Add(time.Duration(b) * time.Hour)}
		for _, n := range names {
			y := 2.0
			rb.Observations = append(rb.Observations, wire.Observation{Product: n, Demand: &y})
		}
		return rb
	}
	r := startDaemon(t, cfg)
	// Status for bins 0 and 1 (station 0 empty throughout bin 1), bin 0's
	// observations; then the daemon stops.
	for minute := 0; minute <= 120; minute += 20 {
		at := origin.Add(time.Duration(minute) * time.Minute)
		m := stationstatus.Message{Schema: 1, Feed: "city", At: at}
		for s, name := range names {
			bikes, docks := 4, 4
			if s == 0 && minute >= 60 {
				bikes, docks = 0, 8
			}
			m.Stations = append(m.Stations, stationstatus.Sample{Station: name, BikesAvailable: bikes, DocksAvailable: &docks,
				Installed: true, Renting: true, Returning: true, LastReported: at})
		}
		data, _ := stationstatus.Encode(&m)
		if _, err := r.js.Publish(ctx, "dcgp.status.city", data); err != nil {
			t.Fatal(err)
		}
	}
	waitMetric(t, r.d.HTTPAddr(), `dcgpd_rebalance_status_samples_total{name="city",outcome="kept"}`, float64(7*len(names)))
	first := collect(t, r.nc, "dcgp.latent.pickups")
	firstRisk := gatherOn(t, r.nc, "dcgp.risk.city")
	for _, model := range []string{"pickups", "returns"} {
		if _, err := natsio.Replay(ctx, r.js, model, []natsio.ReplayBin{bin(0)}, natsio.ReplayOptions{Width: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	first.wait(t, "bin 0", 30*time.Second, func(ms []wire.LatentMessage) bool { return len(ms) > 0 })
	firstRisk.waitFor(t, "bin 0's risk", 1)
	r.stop()

	r = startDaemon(t, cfg)
	// Before any bin closes, the page shows bin 0's ranking read back from
	// the risk bucket, marked restored (and stale: its status is from 2024).
	if v := r.d.RiskIndex(); len(v) != 1 || !v[0].Restored || !v[0].Stale || v[0].BinEnd == nil ||
		!v[0].BinEnd.Equal(origin.Add(time.Hour)) || len(v[0].Stations) != len(names) {
		t.Errorf("risk page right after the restart: %+v; want bin 0's ranking, restored and stale", v)
	}
	pick := collect(t, r.nc, "dcgp.latent.pickups")
	risks := gatherOn(t, r.nc, "dcgp.risk.city")
	for _, model := range []string{"pickups", "returns"} {
		if _, err := natsio.Replay(ctx, r.js, model, []natsio.ReplayBin{bin(1)}, natsio.ReplayOptions{Width: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := pick.wait(t, "bin 1", 30*time.Second, func(ms []wire.LatentMessage) bool {
		for _, m := range ms {
			if m.BinStart.Equal(origin.Add(time.Hour)) {
				return true
			}
		}
		return false
	})
	for _, m := range msgs {
		if !m.BinStart.Equal(origin.Add(time.Hour)) {
			continue
		}
		for i, e := range m.Estimates {
			if e.Censored != (i == 0) {
				t.Errorf("bin 1 after the restart: %s censored %v, want %v", e.Product, e.Censored, i == 0)
			}
		}
	}
	var rm rebalance.RiskMessage
	for n := 1; !rm.BinStart.Equal(origin.Add(time.Hour)); n++ {
		msgs := risks.waitFor(t, "bin 1's risk", n)
		if err := json.Unmarshal(msgs[n-1].Data, &rm); err != nil {
			t.Fatal(err)
		}
	}
	{
		for _, s := range rm.Stations {
			wantBikes := 4
			if s.Station == names[0] {
				wantBikes = 0
			}
			if s.Status != rebalance.StatusOK || s.Bikes != wantBikes || s.StatusAt == nil || !s.StatusAt.Equal(origin.Add(2*time.Hour)) {
				t.Errorf("bin 1's risk after the restart, %s: %+v", s.Station, s)
			}
		}
	}
}

// TestGBFSIntoDaemon chains the adapter and the daemon: the GBFS poller
// reads the recorded 2.3 feed from a local server and publishes through
// JetStream; the daemon takes the five stations in, and the first bin's
// risk starts from them (79 empty, 82 full, 83 closed).
func TestGBFSIntoDaemon(t *testing.T) {
	ids := []string{"72", "79", "82", "83", "116"}
	cfg, _ := rebalanceConfig(t, len(ids), 3)
	day := time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)
	for i := range cfg.Models {
		cfg.Models[i].Origin = day
		for k := range cfg.Models[i].Product {
			cfg.Models[i].Product[k].Name = ids[k]
		}
	}
	cfg.Rebalance[0].MaxStatusAge = config.Duration{Duration: 2 * time.Hour}
	r := startDaemon(t, cfg)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		data, err := os.ReadFile(filepath.Join("..", "stream", "gbfs", "testdata", filepath.FromSlash(strings.TrimPrefix(req.URL.Path, "/"))))
		if err != nil {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write([]byte(strings.ReplaceAll(string(data), "{{BASE}}", "http://"+req.Host)))
	}))
	defer srv.Close()
	gcfg := gbfs.DefaultConfig()
	gcfg.URL, gcfg.Feed = srv.URL+"/v2.3/gbfs.json", "city"
	clock := func() time.Time { return day.Add(8*time.Hour + time.Minute) }
	p, err := gbfs.NewPoller(gcfg, gbfs.JetStreamPublisher{JS: r.js}, nil, zerolog.Nop(), gbfs.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p.Poll(ctx)
	waitMetric(t, r.d.HTTPAddr(), `dcgpd_rebalance_status_samples_total{name="city",outcome="kept"}`, float64(len(ids)))
	risks := gatherOn(t, r.nc, "dcgp.risk.city")
	rb := natsio.ReplayBin{Start: day.Add(8 * time.Hour)}
	for _, n := range ids {
		y := 2.0
		rb.Observations = append(rb.Observations, wire.Observation{Product: n, Demand: &y})
	}
	for _, model := range []string{"pickups", "returns"} {
		if _, err := natsio.Replay(ctx, r.js, model, []natsio.ReplayBin{rb}, natsio.ReplayOptions{Width: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	var rm rebalance.RiskMessage
	if err := json.Unmarshal(risks.waitFor(t, "the bin's risk", 1)[0].Data, &rm); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		status          string
		bikes, capacity int
	}{"72": {"ok", 12, 53}, "79": {"ok", 0, 32}, "82": {"ok", 27, 27}, "83": {"out_of_service", 0, 0}, "116": {"ok", 20, 50}}
	for _, s := range rm.Stations {
		w := want[s.Station]
		if s.Status != w.status || s.Bikes != w.bikes || s.Capacity != w.capacity {
			t.Errorf("%s: status %s, %d bikes of %d; want %s, %d of %d", s.Station, s.Status, s.Bikes, s.Capacity, w.status, w.bikes, w.capacity)
		}
	}
	if len(rm.Stations) != len(ids) {
		t.Fatalf("%d stations in the risk, want %d", len(rm.Stations), len(ids))
	}
}
