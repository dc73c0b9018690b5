package test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/ocpi"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// evT0 is the start of the status timeline's minute 0 (bin 0).
var evT0 = time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)

func evMinute(m float64) time.Time { return evT0.Add(time.Duration(m * float64(time.Minute))) }

// ocpiTimeline serves an OCPI 2.2.1 locations endpoint from the EVSE
// status changes in testdata/ocpi/timeline.csv: at the poll's (virtual)
// time each EVSE has its latest status, last_updated when it changed.
// bad makes the next responses a recorded bad one instead.
type ocpiTimeline struct {
	mu     sync.Mutex
	now    time.Time
	bad    string
	events []ocpi.StatusEvent // time order
	sites  []string
}

func loadTimeline(t *testing.T) *ocpiTimeline {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "ocpi", "timeline.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	tl := &ocpiTimeline{}
	seen := map[string]bool{}
	for _, r := range rows[1:] {
		m, err := strconv.ParseFloat(r[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		tl.events = append(tl.events, ocpi.StatusEvent{Site: r[1], EVSE: r[2], Status: ocpi.Status(r[3]), At: evMinute(m)})
		if !seen[r[1]] {
			seen[r[1]] = true
			tl.sites = append(tl.sites, r[1])
		}
	}
	sort.SliceStable(tl.events, func(i, j int) bool { return tl.events[i].At.Before(tl.events[j].At) })
	return tl
}

func (tl *ocpiTimeline) set(now time.Time, bad string) {
	tl.mu.Lock()
	tl.now, tl.bad = now, bad
	tl.mu.Unlock()
}

func (tl *ocpiTimeline) clock() time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.now
}

func (tl *ocpiTimeline) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	tl.mu.Lock()
	now, bad := tl.now, tl.bad
	tl.mu.Unlock()
	switch bad {
	case "500":
		http.Error(w, "upstream unavailable", http.StatusInternalServerError)
		return
	case "malformed.json", "ocpi_error.json":
		b, _ := os.ReadFile(filepath.Join("testdata", "ocpi", bad))
		_, _ = w.Write(b)
		return
	}
	type evse struct {
		UID         string    `json:"uid"`
		Status      string    `json:"status"`
		LastUpdated time.Time `json:"last_updated"`
	}
	type location struct {
		ID    string `json:"id"`
		EVSEs []evse `json:"evses"`
	}
	var locs []location
	for _, site := range tl.sites {
		latest := map[string]ocpi.StatusEvent{}
		var order []string
		for _, e := range tl.events {
			if e.Site != site || e.At.After(now) {
				continue
			}
			if _, ok := latest[e.EVSE]; !ok {
				order = append(order, e.EVSE)
			}
			latest[e.EVSE] = e
		}
		l := location{ID: site}
		for _, id := range order {
			e := latest[id]
			st := string(e.Status)
			if bad == "unknown-status" && id == "C-1" {
				st = "FREE"
			}
			l.EVSEs = append(l.EVSEs, evse{UID: id, Status: st, LastUpdated: e.At})
		}
		locs = append(locs, l)
	}
	stamp := now
	if bad == "stale" {
		stamp = now.Add(-20 * time.Minute)
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(len(locs)))
	_ = json.NewEncoder(w).Encode(map[string]any{"data": locs, "status_code": 1000, "status_message": "Success", "timestamp": stamp})
}

// TestEVStatusEndToEnd: OCPI locations served from testdata (good and
// bad responses) → the `dcgpd ocpi` poller → the daemon (examples/ev-5min,
// its own [[charging]] entry) → estimates. Per 5-minute bin and site the
// published estimate is censored exactly where the status had the site
// full for more than half the bin (with sessions served), unobserved
// with its turned-away demand where it was full and served nobody, and
// left as sent where the polls
// failed for the whole bin; bad status messages are refused with their
// reason; the daemon restarts between bins 1 and 2 and bin 2 still sees
// the statuses published before.
func TestEVStatusEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: runs a daemon")
	}
	dir := t.TempDir()
	for _, f := range []string{"model.toml", "products.csv"} {
		copyFile(t, filepath.Join("..", "examples", "ev-5min", f), filepath.Join(dir, f))
	}
	example, err := os.ReadFile(filepath.Join("..", "examples", "ev-5min", "dcgpd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:-1\"\nstore_dir = %q\n\n[http]\nlisten = \"127.0.0.1:0\"\n\n[log]\nlevel = \"error\"\n\n[snapshot]\ndir = %q\n\n",
		filepath.Join(dir, "js"), filepath.Join(dir, "snap"))
	if !strings.Contains(string(example), "[[charging]]\nmodel = \"ev\"\nmax_poll_gap = \"2m\"\n") {
		t.Fatal("examples/ev-5min/dcgpd.toml has no [[charging]] entry for ev with max_poll_gap 2m")
	}
	path := filepath.Join(dir, "dcgpd.toml")
	if err := os.WriteFile(path, []byte(head+string(example)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	tl := loadTimeline(t)
	hs := httptest.NewServer(tl)
	defer hs.Close()

	// Per bin: the sessions started at north, centre, east (the
	// observations) and what the estimate must show under the default
	// censor_fraction (0.5): C full for more than half the polls' covered
	// time and censored, E the same with nobody served (no observation,
	// turned-away demand), U supply to spare or full for less (bin 0:
	// north 2 and centre 1.5 of 4.5 minutes; bin 4: north 2), K polls
	// failed (as sent: observed, not censored).
	served := [][3]float64{{2, 1, 1}, {0, 0, 0}, {0, 1, 1}, {2, 0, 0}, {0, 1, 0}, {0, 0, 0}}
	want := []string{"UUU", "UEU", "UCC", "KKK", "UCU", "UEU"}
	// Polls at every minute's half; bin 3's all fail, one of bin 4's
	// refuses C-1's status alone.
	badPoll := map[float64]string{15.5: "500", 16.5: "malformed.json", 17.5: "ocpi_error.json", 18.5: "stale", 19.5: "500", 23.5: "unknown-status"}
	failReason := map[string]string{"500": ocpi.ReasonHTTPStatus, "malformed.json": ocpi.ReasonMalformed, "ocpi_error.json": ocpi.ReasonOCPIStatus, "stale": ocpi.ReasonStaleResp}
	sites := []string{"site-north", "site-centre", "site-east"}

	// The hand-written table agrees with the timeline read directly: a
	// known bin is full (C or E) iff more than half its covered time had
	// no EVSE available.
	for b, row := range want {
		for s, site := range sites {
			if row[s] == 'K' {
				continue
			}
			var ev []ocpi.StatusEvent
			for _, e := range tl.events {
				if e.Site == site {
					ev = append(ev, e)
				}
			}
			sup, err := ocpi.SupplyFromStatus(ev, evMinute(float64(5*b)), 4*time.Minute+30*time.Second, 1)
			if err != nil {
				t.Fatal(err)
			}
			if full := row[s] == 'C' || row[s] == 'E'; (sup[0].FullFraction > 0.5) != full || (row[s] == 'E') != (full && served[b][s] == 0) {
				t.Fatalf("the test's table: bin %d %s is %c, the timeline says full %.3f of it with %v served", b, site, row[s], sup[0].FullFraction, served[b][s])
			}
		}
	}

	r := startDaemon(t, cfg)
	defer func() { r.stop() }()
	pub := ocpi.NewNATSPublisher(r.nc, "dcgp", "ev")
	pub.JS = r.js
	pc := ocpi.DefaultConfig()
	pc.URL, pc.Timeout = hs.URL+"/ocpi/2.2.1/locations", 5*time.Second
	poller, err := ocpi.NewPoller(pc, pub, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	poller.SetClock(tl.clock)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Published where no stream stores them, the statuses fail the poll
	// (reason publish) instead of being lost unnoticed.
	stray := ocpi.NewNATSPublisher(r.nc, "nowhere", "ev")
	stray.JS = r.js
	strayPoller, err := ocpi.NewPoller(pc, stray, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	strayPoller.SetClock(tl.clock)
	tl.set(evMinute(-1), "")
	var pe *ocpi.PollError
	if _, err := strayPoller.Poll(ctx); !errors.As(err, &pe) || pe.Reason != ocpi.ReasonPublish {
		t.Fatalf("a poll published where no stream stores it: %v, want a failure for %s", err, ocpi.ReasonPublish)
	}
	out := collect(t, r.nc, "dcgp.latent.ev")
	okPolls := 0
	var got []wire.LatentMessage
	for b := range want {
		if b == 2 {
			r.stop()
			r = startDaemon(t, cfg)
			pub.Conn, pub.JS = r.nc, r.js
			out = collect(t, r.nc, "dcgp.latent.ev")
		}
		for m := float64(5*b) + 0.5; m < float64(5*b+5); m++ {
			tl.set(evMinute(m), badPoll[m])
			_, err := poller.Poll(ctx)
			var pe *ocpi.PollError
			switch reason, bad := failReason[badPoll[m]]; {
			case bad && (!errors.As(err, &pe) || pe.Reason != reason):
				t.Fatalf("poll at minute %v: %v, want a failure for %s", m, err, reason)
			case !bad && err != nil:
				t.Fatalf("poll at minute %v: %v", m, err)
			case !bad:
				okPolls++
			}
		}
		if err := r.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		waitMetric(t, r.d.HTTPAddr(), `dcgpd_charging_status_messages_total{model="ev",outcome="poll"}`, float64(okPolls))
		if b == 4 {
			for _, bad := range []string{`{"schema":1,`,
				`{"schema":1,"model":"ev","site":"site-north","evse":"N-1","status":"FREE","at":"2024-05-06T08:20:00Z"}`,
				`{"schema":1,"model":"bus","site":"site-north","evse":"N-1","status":"AVAILABLE","at":"2024-05-06T08:20:00Z"}`} {
				if _, err := r.js.Publish(ctx, "dcgp.evse.ev", []byte(bad)); err != nil {
					t.Fatal(err)
				}
			}
			for _, reason := range []string{ocpi.ReasonMsgMalformed, ocpi.ReasonMsgValue, wire.ReasonModel} {
				waitMetric(t, r.d.HTTPAddr(), `dcgpd_observations_rejected_total{model="ev",reason="`+reason+`"}`, 1)
			}
		}
		rb := natsio.ReplayBin{Start: evMinute(float64(5 * b))}
		for s, site := range sites {
			y := served[b][s]
			rb.Observations = append(rb.Observations, wire.Observation{Product: site, Demand: &y})
		}
		if _, err := natsio.Replay(ctx, r.js, "ev", []natsio.ReplayBin{rb}, natsio.ReplayOptions{Width: 5 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		msgs := out.wait(t, fmt.Sprintf("bin %d", b), 60*time.Second, func(ms []wire.LatentMessage) bool {
			for _, m := range ms {
				if m.BinStart.Equal(rb.Start) {
					return true
				}
			}
			return false
		})
		for _, m := range msgs {
			if m.BinStart.Equal(rb.Start) {
				got = append(got, m)
				break
			}
		}
	}
	for b, m := range got {
		for s, e := range m.Estimates {
			if e.Product != sites[s] {
				t.Fatalf("bin %d: estimate %d is %s, want %s", b, s, e.Product, sites[s])
			}
			var c byte
			switch {
			case e.Censored && e.Observed && e.TurnedAway != nil:
				c = 'C'
			case !e.Observed && e.TurnedAway != nil:
				c = 'E'
			case e.Observed && !e.Censored && e.TurnedAway == nil:
				c = 'U' // or K: the same estimate; the metrics tell them apart
				if want[b][s] == 'K' {
					c = 'K'
				}
			}
			if c != want[b][s] {
				t.Errorf("bin %d %s: observed %v censored %v turned away %v, want %c", b, e.Product, e.Observed, e.Censored, e.TurnedAway != nil, want[b][s])
			}
		}
	}
	// After the restart (bins 2-5): 3 unknown site-bins (bin 3), and
	// every other one decided by the status.
	for outcome, n := range map[string]float64{"censored": 3, "emptied": 1, "uncensored": 5, "unknown": 3} {
		waitMetric(t, r.d.HTTPAddr(), `dcgpd_charging_censoring_total{model="ev",outcome="`+outcome+`"}`, n)
	}
}
