package feedflow

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
	"github.com/dcgpd/dcgpd/stream/statusflow"
	"github.com/dcgpd/dcgpd/stream/wire"
)

func TestObservation(t *testing.T) {
	for _, tc := range []struct {
		name string
		bin  statusflow.Bin
		n    int
		want string // JSON, "" for no observation
	}{
		{"unobserved", statusflow.Bin{Station: "a"}, 0, ""},
		{"whole bin", statusflow.Bin{Station: "a", Observed: true, Coverage: 1}, 4, `{"product":"a","demand":4}`},
		{"censored below", statusflow.Bin{Station: "a", Observed: true, Coverage: 0.4, CensoredBelow: true}, 3, `{"product":"a","demand":3,"supply":3,"censored":true}`},
		{"censored at zero: no information", statusflow.Bin{Station: "a", Observed: true, CensoredBelow: true}, 0, ""},
		{"zero, whole bin", statusflow.Bin{Station: "a", Observed: true, Coverage: 1}, 0, `{"product":"a","demand":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, ok := Observation(&tc.bin, tc.n)
			got := ""
			if ok {
				b, err := json.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// status is a snapshot at second s of the two stations' bikes (capacity
// 20, reporting at the snapshot's time).
func status(s int, bikes map[string]int) *stationstatus.Message {
	at := time.Unix(int64(s), 0).UTC()
	m := &stationstatus.Message{Schema: 1, Feed: "f", At: at}
	for _, id := range []string{"a", "b"} {
		n, ok := bikes[id]
		if !ok {
			continue
		}
		docks := 20 - n
		m.Stations = append(m.Stations, stationstatus.Sample{Station: id, BikesAvailable: n, DocksAvailable: &docks,
			Installed: true, Renting: true, Returning: true, LastReported: at})
	}
	return m
}

// TestTakeBins feeds polls every second on a 5 s grid (max gap 3 s, no
// trucks) and checks each bin's messages against a hand count: the net
// change of each interval in the bin (start, end] of its later poll; the
// first bin, partly covered, censored at its counts; a station whose
// report repeats is counted unchanged and, without two reports, not
// observed; a bin is sent once the deriver
// is advanced (to the previous snapshot) past its end plus the lag.
func TestTakeBins(t *testing.T) {
	cfg := statusflow.DefaultConfig()
	cfg.Bin, cfg.MaxGap, cfg.TruckWindow, cfg.DetectTrucks = 5*time.Second, 3*time.Second, 2*time.Second, false
	f, err := New(Config{Flow: cfg, Pickups: "p", Returns: "r", Prefix: "dcgp"})
	if err != nil {
		t.Fatal(err)
	}
	// a: 10 at 2 s, then -1 a second to 5 at 7 s, flat after, reporting
	// every second. b: 5 throughout, reported only at 2 s (every later
	// snapshot repeats that report: no interval, no observation).
	a := map[int]int{2: 10, 3: 9, 4: 8, 5: 7, 6: 6}
	var outs []Out
	for s := 2; s <= 14; s++ {
		bikes := map[string]int{"a": 5, "b": 5}
		if v, ok := a[s]; ok {
			bikes["a"] = v
		}
		m := status(s, bikes)
		m.Stations[1].LastReported = time.Unix(2, 0).UTC()
		got, err := f.Take(m)
		if err != nil {
			t.Fatal(err)
		}
		if s < 9 && len(got) > 0 { // bin (0,5] goes once advanced to 8 s (5 + lag 3): at the snapshot of 9 s
			t.Fatalf("second %d: %d messages before the first bin could be complete", s, len(got))
		}
		outs = append(outs, got...)
	}
	want := []struct {
		subject, id, obs string
	}{
		{"dcgp.obs.p", "p/0/flow/0", `[{"product":"a","demand":3,"supply":3,"censored":true}]`},
		{"dcgp.obs.p", "p/0/watermark", ""},
		{"dcgp.obs.r", "r/0/watermark", ""},
		{"dcgp.obs.p", "p/5/flow/0", `[{"product":"a","demand":2}]`},
		{"dcgp.obs.p", "p/5/watermark", ""},
		{"dcgp.obs.r", "r/5/flow/0", `[{"product":"a","demand":0}]`},
		{"dcgp.obs.r", "r/5/watermark", ""},
	}
	if len(outs) != len(want) {
		for _, o := range outs {
			t.Logf("%s %s %s", o.Subject, o.MsgID, o.Data)
		}
		t.Fatalf("%d messages, want %d", len(outs), len(want))
	}
	for i, w := range want {
		o := outs[i]
		var m wire.ObsMessage
		if err := json.Unmarshal(o.Data, &m); err != nil {
			t.Fatal(err)
		}
		got := ""
		if m.Observations != nil {
			b, _ := json.Marshal(m.Observations)
			got = string(b)
		}
		if o.Subject != w.subject || o.MsgID != w.id || got != w.obs || (w.obs == "") != (m.Watermark != nil) {
			t.Errorf("message %d: %s %s %s (watermark %v), want %s %s %s", i, o.Subject, o.MsgID, got, m.Watermark, w.subject, w.id, w.obs)
		}
	}
	st := f.Stats()
	// b's samples at 3..14 s repeat its 2 s report; a's bins (0,5] (partly
	// covered: censored) and (5,10] are observed, b's not.
	// a's returns in (0,5], 0 censored from below, are not sent.
	if st.Unchanged != 12 || len(st.Refused) != 0 || st.Bins != 4 || st.Observed != 2 || st.Censored != 1 || st.ZeroBounds != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestTakeOnlyTheModelsStations: samples of a station the models do not
// have are counted and dropped, never sent.
func TestTakeOnlyTheModelsStations(t *testing.T) {
	cfg := statusflow.DefaultConfig()
	cfg.Bin, cfg.MaxGap, cfg.TruckWindow, cfg.DetectTrucks = 5*time.Second, 3*time.Second, 2*time.Second, false
	f, err := New(Config{Flow: cfg, Pickups: "p", Returns: "r", Prefix: "dcgp", Stations: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	var sent []wire.Observation
	for s := 2; s <= 14; s++ {
		outs, err := f.Take(status(s, map[string]int{"a": 10 - s/2, "b": s}))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			var m wire.ObsMessage
			if err := json.Unmarshal(o.Data, &m); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, m.Observations...)
		}
	}
	for _, o := range sent {
		if o.Product != "a" {
			t.Errorf("sent %+v", o)
		}
	}
	if st := f.Stats(); len(sent) != 3 || st.Ignored != 13 {
		t.Errorf("%d observations sent (want a's 2 bins × 2 flows but its first bin's returns, 0 censored from below), %d samples ignored (want b's 13)", len(sent), st.Ignored)
	}
}
