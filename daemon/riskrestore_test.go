package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natstest"
	"github.com/dcgpd/dcgpd/stream/rebalance"
)

// kvRiskOut writes a job's bucket entries to a real risk bucket.
type kvRiskOut struct {
	t  *testing.T
	kv jetstream.KeyValue
}

func (kvRiskOut) PublishRisk(string, []byte) {}
func (o kvRiskOut) PutRisk(key string, data []byte) {
	if _, err := o.kv.Put(context.Background(), key, data); err != nil {
		o.t.Error(err)
	}
}

// TestRiskRankingRestoredAfterRestart: a restarted daemon reads the
// ranking its predecessor left in the risk bucket and shows it at once,
// marked restored with its age (stale once older than max_status_age),
// instead of nothing until the next bin closes; an entry it cannot decode
// and another system's entries are left out; a bin that closes with a
// stale feed keeps the restored ranking shown, and the first bin with
// usable status replaces it.
func TestRiskRankingRestoredAfterRestart(t *testing.T) {
	_, nc := natstest.Embedded(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := setupRebalanceStreams(ctx, js, &config.NATSConfig{Prefix: "dcgp", Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, riskBucket)
	if err != nil {
		t.Fatal(err)
	}
	// The first process: bins 0 and 1 with fresh status, written to the
	// bucket; a bad entry and another system's entry beside them.
	before := newViewFixture(t)
	job, err := rebalance.NewJob(before.job.Config(), before.ids, kvRiskOut{t, kv}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	before.job = job
	before.status(before.t0.Add(59 * time.Minute))
	before.bin(0)
	before.status(before.t0.Add(119 * time.Minute))
	before.bin(1)
	for key, val := range map[string]string{"city.broken": "{not json", "other.park": `{"schema":1,"name":"other"}`} {
		if _, err := kv.Put(ctx, key, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	want := riskView(&before.rc, before.job, before.t0.Add(2*time.Hour))

	// The restarted process: nothing computed yet.
	after := newViewFixture(t)
	d := &Daemon{log: zerolog.Nop()}
	d.restoreRanking(ctx, js, &rebalanceRun{cfg: after.rc, job: after.job})
	for _, tc := range []struct {
		name    string
		now     time.Time
		stale   bool
		ageSecs int64
	}{
		{"ten minutes after the bin", after.t0.Add(2*time.Hour + 10*time.Minute), false, 600},
		{"two hours after the bin", after.t0.Add(4 * time.Hour), true, 7200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := riskView(&after.rc, after.job, tc.now)
			if !v.Restored || v.AgeSeconds != tc.ageSecs || v.Stale != tc.stale || v.BinEnd == nil || !v.BinEnd.Equal(*want.BinEnd) {
				t.Fatalf("restored view: restored %v age %d s stale %v (%s) bin end %v; want restored, %d s, stale %v, bin end %v",
					v.Restored, v.AgeSeconds, v.Stale, v.StaleDetail, v.BinEnd, tc.ageSecs, tc.stale, want.BinEnd)
			}
			if tc.stale && !strings.Contains(v.StaleDetail, "ranking restored from the risk bucket at start, as of 2024-05-06T10:00:00Z, 2 h old (max_status_age 30 min)") {
				t.Errorf("stale detail %q", v.StaleDetail)
			}
			if len(v.Stations) != len(want.Stations) || v.Urgent != want.Urgent || v.HorizonSeconds != want.HorizonSeconds {
				t.Fatalf("restored: %d stations, %d urgent, horizon %d s; the first process showed %d, %d, %d s",
					len(v.Stations), v.Urgent, v.HorizonSeconds, len(want.Stations), want.Urgent, want.HorizonSeconds)
			}
			for i := range want.Stations {
				g, w := v.Stations[i], want.Stations[i]
				if g.Station != w.Station || g.Move != w.Move || g.Empty != w.Empty || g.Full != w.Full || g.Urgency != w.Urgency {
					t.Errorf("line %d: %+v, the first process showed %+v", i, g, w)
				}
			}
		})
	}
	// A bin closes with the feed stale (no status since the restart's
	// predecessor): the restored ranking stays shown, marked stale.
	after.bin(2)
	v := riskView(&after.rc, after.job, after.t0.Add(3*time.Hour+time.Minute))
	if !v.Restored || !v.Stale || len(v.Stations) != 3 || v.Stations[0].Status != rebalance.StatusOK || !v.BinEnd.Equal(*want.BinEnd) {
		t.Fatalf("stale bin after the restart: restored %v stale %v (%s), bin end %v, first %+v", v.Restored, v.Stale, v.StaleDetail, v.BinEnd, v.Stations[0])
	}
	// Fresh status and a bin: the job's own ranking replaces it.
	after.status(after.t0.Add(239 * time.Minute))
	after.bin(3)
	v = riskView(&after.rc, after.job, after.t0.Add(241*time.Minute))
	if v.Restored || v.Stale || !v.BinEnd.Equal(after.t0.Add(4*time.Hour)) {
		t.Fatalf("first fresh bin: restored %v stale %v (%s) bin end %v", v.Restored, v.Stale, v.StaleDetail, v.BinEnd)
	}
}
