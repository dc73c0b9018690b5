package feedflow

import (
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
	"github.com/dcgpd/dcgpd/stream/statusflow"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// FuzzTake feeds arbitrary snapshot streams, 4 bytes a station sample:
// the snapshot's step in seconds (0: same snapshot), station (of 3),
// bikes as a signed byte, and the report's lag behind the snapshot in
// seconds. Nothing panics; every message decodes as the daemon's input
// for one of the two models; a derived count is never negative and a
// censored one has its supply equal to it; every bin's observations
// are followed by its watermark.
func FuzzTake(f *testing.F) {
	f.Add([]byte{1, 0, 10, 0, 0, 1, 4, 0, 1, 0, 9, 0, 1, 1, 5, 2, 6, 0, 3, 0, 1, 2, 8, 0, 9, 0, 3, 1})
	f.Add([]byte{0, 0, 200, 0, 0, 0, 3, 0, 30, 1, 1, 250})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := statusflow.DefaultConfig()
		cfg.Bin, cfg.MaxGap, cfg.TruckWindow = 5*time.Second, 3*time.Second, 2*time.Second
		fl, err := New(Config{Flow: cfg, Pickups: "p", Returns: "r", Prefix: "dcgp"})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Unix(1000, 0).UTC()
		var m *stationstatus.Message
		take := func() {
			if m == nil {
				return
			}
			outs, err := fl.Take(m)
			if err != nil {
				t.Fatal(err)
			}
			checkOuts(t, outs)
		}
		for i := 0; i+4 <= len(data); i += 4 {
			if data[i] > 0 || m == nil {
				take()
				at = at.Add(time.Duration(data[i]) * time.Second)
				m = &stationstatus.Message{Schema: 1, Feed: "f", At: at}
			}
			id := string(rune('a' + data[i+1]%3))
			dup := false
			for _, s := range m.Stations {
				dup = dup || s.Station == id
			}
			if dup {
				continue
			}
			m.Stations = append(m.Stations, stationstatus.Sample{Station: id, BikesAvailable: int(int8(data[i+2])),
				Installed: true, Renting: true, Returning: true, LastReported: at.Add(-time.Duration(data[i+3]) * time.Second)})
		}
		take()
	})
}

func checkOuts(t *testing.T, outs []Out) {
	t.Helper()
	open := map[string]bool{} // model/bin with observations awaiting a watermark
	for _, o := range outs {
		m, err := wire.DecodeObs(o.Data)
		if err != nil {
			t.Fatalf("%s: %v: %s", o.MsgID, err, o.Data)
		}
		if (m.Model != "p" && m.Model != "r") || o.Subject != "dcgp.obs."+m.Model {
			t.Fatalf("%s on %s", m.Model, o.Subject)
		}
		if m.Watermark != nil {
			delete(open, m.Model+m.Watermark.Add(-5*time.Second).String())
			continue
		}
		open[m.Model+m.BinStart.String()] = true
		for _, ob := range m.Observations {
			if ob.Demand == nil || *ob.Demand < 0 || (ob.Censored != nil && *ob.Censored && (ob.Supply == nil || *ob.Supply != *ob.Demand)) {
				t.Fatalf("observation %+v", ob)
			}
		}
	}
	if len(open) > 0 {
		t.Fatalf("bins without a watermark: %v", open)
	}
}
