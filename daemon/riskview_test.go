package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/rebalance"
	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// viewFixture is a job over three stations with hourly bins forecast 6
// ahead: "astor" empty with many pickups (urgent add), "pier" full with
// many returns (urgent removal), "park" half full and quiet.
type viewFixture struct {
	rc  config.RebalanceConfig
	job *rebalance.Job
	ids []string
	t0  time.Time
}

func newViewFixture(t *testing.T) *viewFixture {
	t.Helper()
	f := &viewFixture{rc: config.RebalanceConfig{Name: "city", Pickups: "pickups", Returns: "returns"},
		ids: []string{"park", "pier", "astor"}, t0: time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)}
	c := rebalance.DefaultConfig()
	c.Name, c.Pickups, c.Returns = "city", "pickups", "returns"
	job, err := rebalance.NewJob(c, f.ids, nopRiskOut{}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	f.job = job
	return f
}

// status takes in a snapshot at `at`.
func (f *viewFixture) status(at time.Time) {
	s := func(id, name string, bikes, docks int) stationstatus.Sample {
		return stationstatus.Sample{Station: id, Name: name, BikesAvailable: bikes, DocksAvailable: &docks,
			Installed: true, Renting: true, Returning: true, LastReported: at}
	}
	f.job.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: at, Stations: []stationstatus.Sample{
		s("park", "Park Ave & E 41 St", 10, 10), s("pier", "Pier 40", 20, 0), s("astor", "Astor Pl", 0, 20)}})
}

// bin closes bin k (hour k after t0) in both models.
func (f *viewFixture) bin(k int) {
	for _, m := range []struct {
		model string
		rates []float64 // park, pier, astor
	}{{"pickups", []float64{1, 1, 6}}, {"returns", []float64{1, 6, 1}}} {
		fc := &rebalance.FlowForecast{Model: m.model, BinStart: f.t0.Add(time.Duration(k) * time.Hour),
			BinEnd: f.t0.Add(time.Duration(k+1) * time.Hour), Products: f.ids}
		for range 6 {
			fc.Mean, fc.Var = append(fc.Mean, m.rates), append(fc.Var, []float64{0.1, 0.1, 0.1})
		}
		f.job.Take(context.Background(), fc)
	}
}

func TestRiskViewActions(t *testing.T) {
	f := newViewFixture(t)
	f.status(f.t0.Add(59 * time.Minute))
	f.bin(0)
	now := f.t0.Add(65 * time.Minute)
	v := riskView(&f.rc, f.job, now)
	if v.Stale || v.StatusAgeSeconds != 360 || v.HorizonSeconds != 3*3600 || v.UrgencyThreshold != 0.5 || v.Urgent != 2 {
		t.Fatalf("view: stale %v (%s), status age %d s, horizon %d s, threshold %v, urgent %d",
			v.Stale, v.StaleDetail, v.StatusAgeSeconds, v.HorizonSeconds, v.UrgencyThreshold, v.Urgent)
	}
	want := []struct {
		id, name string
		add      bool
		urgent   bool
	}{{"astor", "Astor Pl", true, true}, {"pier", "Pier 40", false, true}, {"park", "Park Ave & E 41 St", false, false}}
	for i, w := range want {
		e := v.Stations[i]
		if e.Station != w.id || e.Name != w.name || e.Urgent != w.urgent || (e.By != nil) != w.urgent || (w.urgent && (e.Move > 0) != w.add) ||
			e.Move != e.Best-e.Bikes {
			t.Errorf("line %d: %+v, want %s (%s) urgent %v add %v", i, e, w.id, w.name, w.urgent, w.add)
		}
	}
	if e := v.Stations[0]; !e.By.Equal(f.t0.Add(time.Hour)) || e.Empty != 1 || e.Urgency != 1 {
		t.Errorf("the empty station: by %v, P(empty within 3 h) %v, urgency %v; want now, 1, 1", e.By, e.Empty, e.Urgency)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"name":"Astor Pl"`, `"move":`, `"by":"2024-05-06T09:00:00Z"`, `"horizon_seconds":10800`,
		`"urgency_threshold":0.5`, `"urgent":true`, `"stale":false`, `"status":"ok"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("/api/risk JSON lacks %s: %s", key, data)
		}
	}
}

// TestRiskViewStaleKeepsRanking: a feed that goes silent marks the
// ranking stale with its age and keeps it shown, both while no bin
// closes and when a bin closes with no usable status at any station.
func TestRiskViewStaleKeepsRanking(t *testing.T) {
	f := newViewFixture(t)
	f.status(f.t0.Add(59 * time.Minute))
	f.bin(0)
	v := riskView(&f.rc, f.job, f.t0.Add(2*time.Hour))
	if !v.Stale || !strings.Contains(v.StaleDetail, "newest status 1 h 1 min old (max_status_age 30 min)") || len(v.Stations) != 3 || v.Urgent != 2 {
		t.Fatalf("silent feed, no new bin: stale %v %q, %d stations, %d urgent", v.Stale, v.StaleDetail, len(v.Stations), v.Urgent)
	}
	f.bin(1) // its end is 61 min after the newest status: every station stale_status
	if f.job.Ranked().Stations[0].Status != rebalance.StatusStale {
		t.Fatalf("newest bin: %+v", f.job.Ranked().Stations[0])
	}
	v = riskView(&f.rc, f.job, f.t0.Add(2*time.Hour+time.Minute))
	if !v.Stale || !strings.Contains(v.StaleDetail, "no station had usable status at 2024-05-06T10:00:00Z; showing the ranking as of 2024-05-06T09:00:00Z, 1 h before") ||
		len(v.Stations) != 3 || v.Stations[0].Status != rebalance.StatusOK || !v.BinEnd.Equal(f.t0.Add(time.Hour)) || v.Statuses[rebalance.StatusStale] != 3 {
		t.Fatalf("stale bin: stale %v %q, bin end %v, statuses %v, first %+v", v.Stale, v.StaleDetail, v.BinEnd, v.Statuses, v.Stations[0])
	}
	// The feed comes back: the newest bin is shown again, not stale.
	f.status(f.t0.Add(179 * time.Minute))
	f.bin(2)
	v = riskView(&f.rc, f.job, f.t0.Add(181*time.Minute))
	if v.Stale || !v.BinEnd.Equal(f.t0.Add(3*time.Hour)) {
		t.Fatalf("feed back: stale %v %q, bin end %v", v.Stale, v.StaleDetail, v.BinEnd)
	}
}

func TestRiskViewBeforeFirstBin(t *testing.T) {
	f := newViewFixture(t)
	v := riskView(&f.rc, f.job, f.t0)
	if v.Stale || v.BinEnd != nil || v.StatusAt != nil || len(v.Stations) != 0 || v.Stations == nil {
		t.Fatalf("before any status or bin: %+v", v)
	}
}

func TestHumanAge(t *testing.T) {
	for d, want := range map[time.Duration]string{44*time.Second + 600*time.Millisecond: "45 s", 42 * time.Minute: "42 min",
		time.Hour: "1 h", 65 * time.Minute: "1 h 5 min", 74 * time.Hour: "3 d 2 h"} {
		if got := humanAge(d); got != want {
			t.Errorf("humanAge(%v) = %q, want %q", d, got, want)
		}
	}
}
