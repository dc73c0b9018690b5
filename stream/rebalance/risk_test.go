package rebalance

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/inventory"
	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// flow builds a forecast for the bin [08:00, 09:00) over products with
// mean mean[i]+0.1h and variance 1 for every horizon.
func flow(model string, products []string, means []float64, horizon int) *FlowForecast {
	f := &FlowForecast{Model: model, BinStart: at(0), BinEnd: at(60), Products: products}
	for h := range horizon {
		m, v := make([]float64, len(products)), make([]float64, len(products))
		for i := range products {
			m[i], v[i] = means[i]+0.1*float64(h), 1
		}
		f.Mean, f.Var = append(f.Mean, m), append(f.Var, v)
	}
	return f
}

func testConfig() Config {
	c := DefaultConfig()
	c.Name, c.Pickups, c.Returns = "city", "pickups", "returns"
	return c
}

func TestRiskerMatchesPlanner(t *testing.T) {
	cfg := testConfig()
	stations := []string{"full", "empty", "fine", "closed", "stale", "silent", "nan"}
	tr := NewTracker(cfg, stations)
	sample := func(name string, bikes, docks int, reported time.Time, mods ...func(*stationstatus.Sample)) stationstatus.Sample {
		s := stationstatus.Sample{Station: name, BikesAvailable: bikes, DocksAvailable: ip(docks), BikesDisabled: 1,
			Installed: true, Renting: true, Returning: true, LastReported: reported}
		for _, m := range mods {
			m(&s)
		}
		return s
	}
	tr.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: at(10), Stations: []stationstatus.Sample{sample("stale", 3, 3, at(9))}})
	tr.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: at(58), Stations: []stationstatus.Sample{
		sample("full", 19, 1, at(57)), sample("empty", 1, 19, at(57)), sample("fine", 10, 10, at(50)),
		sample("closed", 4, 4, at(57), notRenting), sample("nan", 4, 4, at(57))}})
	// A sample after the bin's end is not the inventory at its end.
	tr.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: at(65), Stations: []stationstatus.Sample{sample("fine", 0, 20, at(65))}})
	pick := flow("pickups", stations, []float64{1, 4, 2, 1, 1, 1, math.NaN()}, 6)
	// The returns model lists the stations in another order.
	rev := append([]string(nil), stations...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	ret := flow("returns", rev, []float64{1, 1, 1, 1, 2, 1, 4}, 6) // "full" (index 6 reversed) returns at 4
	rk, err := NewRisker(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rk.Compute(context.Background(), pick, ret)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]StationRisk{}
	for _, r := range got {
		byName[r.Station] = r
	}
	wantStatus := map[string]string{"full": StatusOK, "empty": StatusOK, "fine": StatusOK, "closed": StatusOutOfService,
		"stale": StatusStale, "silent": StatusNoStatus, "nan": StatusError}
	for name, w := range wantStatus {
		if byName[name].Status != w {
			t.Errorf("%s: status %q (%s), want %q", name, byName[name].Status, byName[name].Detail, w)
		}
	}
	// The three ok stations first, by score; then the others by name.
	order := []string{}
	for _, r := range got {
		order = append(order, r.Station)
	}
	if order[3] != "closed" || order[4] != "nan" || order[5] != "silent" || order[6] != "stale" {
		t.Fatalf("order %v: the stations without a risk must follow, by name", order)
	}
	if !(got[0].Score >= got[1].Score && got[1].Score >= got[2].Score) {
		t.Fatalf("not ranked by score: %v %v %v", got[0].Score, got[1].Score, got[2].Score)
	}
	// Each ok station equals the planner's own answer on the same input
	// (capacity = bikes + docks available; the forecasts matched by name).
	pl, _ := inventory.NewPlanner(cfg.inventoryConfig())
	for _, c := range []struct {
		name        string
		bikes, cap  int
		pickI, retI int
	}{{"full", 19, 20, 0, 6}, {"empty", 1, 20, 1, 5}, {"fine", 10, 20, 2, 4}} {
		var want inventory.Risk
		lam := inventory.Forecast{}
		mu := inventory.Forecast{}
		for h := range 6 {
			lam.Mean, lam.Var = append(lam.Mean, pick.Mean[h][c.pickI]), append(lam.Var, 1)
			mu.Mean, mu.Var = append(mu.Mean, ret.Mean[h][c.retI]), append(mu.Var, 1)
		}
		if err := pl.Risk(&want, inventory.Station{Capacity: c.cap, Bikes: c.bikes}, lam, mu); err != nil {
			t.Fatal(err)
		}
		r := byName[c.name]
		if r.Capacity != c.cap || r.Bikes != c.bikes || !reflect.DeepEqual(r.EmptyWithin, want.EmptyWithin) || !reflect.DeepEqual(r.FullWithin, want.FullWithin) ||
			!reflect.DeepEqual(r.UDF, want.UDF) || r.Best != want.Best || r.UnmetPickups != want.UnmetPickups || r.UnmetReturns != want.UnmetReturns ||
			r.OneMore != want.OneMore || r.OneLess != want.OneLess {
			t.Errorf("%s: %+v\nwant %+v", c.name, r, want)
		}
		if s := math.Max(want.EmptyWithin[5], want.FullWithin[5]); r.Score != s {
			t.Errorf("%s: score %v, want %v", c.name, r.Score, s)
		}
	}
	if byName["full"].FullWithin[0] <= byName["empty"].FullWithin[0] || byName["empty"].EmptyWithin[0] <= byName["full"].EmptyWithin[0] {
		t.Errorf("the nearly full station is not the likelier to fill, or the nearly empty one to empty")
	}
	// A missing bin: every station says no_forecast.
	pick.Missing = "numerics"
	got, _ = rk.Compute(context.Background(), pick, ret)
	for _, r := range got {
		if r.Status != StatusNoForecast {
			t.Fatalf("%s: status %q after a missing bin, want no_forecast", r.Station, r.Status)
		}
	}
}

// memOut records a job's publications.
type memOut struct {
	mu   sync.Mutex
	ids  []string
	msgs [][]byte
	kv   map[string][]byte
}

func (m *memOut) PublishRisk(id string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids, m.msgs = append(m.ids, id), append(m.msgs, data)
}

func (m *memOut) PutRisk(key string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kv == nil {
		m.kv = map[string][]byte{}
	}
	m.kv[key] = data
}

func TestJobPairsBins(t *testing.T) {
	cfg := testConfig()
	names := make([]string, 450)
	for i := range names {
		names[i] = fmt.Sprintf("s:%03d", i)
	}
	out := &memOut{}
	met := NewMetrics(nil)
	j, err := NewJob(cfg, names, out, met, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var samples []stationstatus.Sample
	for _, n := range names {
		samples = append(samples, stationstatus.Sample{Station: n, BikesAvailable: 5, DocksAvailable: ip(5), Installed: true, Renting: true, Returning: true, LastReported: at(59)})
	}
	j.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: at(59), Stations: samples})
	means := make([]float64, len(names))
	for i := range means {
		means[i] = 2
	}
	bin := func(model string, shift time.Duration) *FlowForecast {
		f := flow(model, names, means, 4)
		f.BinStart, f.BinEnd = f.BinStart.Add(shift), f.BinEnd.Add(shift)
		return f
	}
	// Returns of bin 0 come first; the pickups model's bin -1 never pairs.
	for _, f := range []*FlowForecast{bin("returns", 0), bin("pickups", -time.Hour), bin("pickups", 0)} {
		j.Take(context.Background(), f)
	}
	if len(out.ids) != 3 || out.ids[0] != "city/1714982400/risk/0" || out.ids[2] != "city/1714982400/risk/2" {
		t.Fatalf("ids %v, want 3 parts of bin 08:00", out.ids)
	}
	n := 0
	for _, data := range out.msgs {
		var m RiskMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		if m.Parts != 3 || m.Horizon != 4 || m.PlanningBins != 4 {
			t.Fatalf("part %d of %d, horizon %d", m.Part, m.Parts, m.Horizon)
		}
		n += len(m.Stations)
	}
	if n != len(names) || len(out.kv) != len(names) {
		t.Fatalf("%d stations in messages, %d in the bucket, want %d", n, len(out.kv), len(names))
	}
	var e Entry
	if err := json.Unmarshal(out.kv["city.s=3A007"], &e); err != nil || e.Risk.Station != "s:007" || e.Risk.Status != StatusOK {
		t.Fatalf("bucket entry of s:007: %v %+v", err, e)
	}
	if r := j.Ranked(); r == nil || len(r.Stations) != len(names) {
		t.Fatal("no ranked risks for the page")
	}
	if len(j.pending) != 0 {
		t.Fatalf("%d bins still pending", len(j.pending))
	}
	// Run stops on cancellation.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- j.Run(ctx) }()
	if err := j.Offer(ctx, bin("pickups", time.Hour)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{"72": "city.72", "bcn:1": "city.bcn=3A1", "a.b/c=d": "city.a=2Eb=2Fc=3Dd", "x_y-Z": "city.x_y-Z"} {
		if got := Key("city", in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkJobBin is one bin's risk step for a city: every station's risk
// from both flows' forecasts, encoded into messages and bucket entries
// (publication to an in-memory recorder). 2,000 stations, capacities
// 10..80, H = 24.
func BenchmarkJobBin(b *testing.B) {
	const n, h = 2000, 24
	cfg := testConfig()
	names := make([]string, n)
	samples := make([]stationstatus.Sample, n)
	for i := range names {
		names[i] = fmt.Sprintf("st-%04d", i)
		c := 10 + (i*7)%71 // 10..80
		bikes := (i * 13) % (c + 1)
		samples[i] = stationstatus.Sample{Station: names[i], BikesAvailable: bikes, DocksAvailable: ip(c - bikes),
			Installed: true, Renting: true, Returning: true, LastReported: at(59)}
	}
	j, err := NewJob(cfg, names, &memOut{}, nil, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	j.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: at(59), Stations: samples})
	pm, rm := make([]float64, n), make([]float64, n)
	for i := range pm {
		pm[i], rm[i] = 1+float64(i%9), 1+float64((i*5)%9) // 1..9 trips a bin
	}
	pick, ret := flow("pickups", names, pm, h), flow("returns", names, rm, h)
	for k := range h { // a daily shape in the variances too
		for i := range names {
			pick.Var[k][i], ret.Var[k][i] = 0.5+0.1*float64(k%6), 0.5+0.1*float64((k+3)%6)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		j.compute(context.Background(), &pair{pickups: pick, returns: ret})
	}
}

// TestMessagesBoundedBytes: large stations are split into more parts, each
// message's JSON under MessageBytes, every station once, in rank order.
func TestMessagesBoundedBytes(t *testing.T) {
	rk, err := NewRisker(testConfig(), NewTracker(testConfig(), nil))
	if err != nil {
		t.Fatal(err)
	}
	f := flow("pickups", nil, nil, 96)
	for _, capacity := range []int{10, 1000} {
		ranked := make([]StationRisk, 450)
		for i := range ranked {
			s := &ranked[i]
			s.Station, s.Status = fmt.Sprintf("st-%03d", i), StatusOK
			s.UDF = make([]float64, capacity+1)
			s.EmptyWithin, s.FullWithin = make([]float64, 96), make([]float64, 96)
			for k := range s.UDF {
				s.UDF[k] = 1 / (3 + float64(k)) // 17 significant digits
			}
			for k := range s.EmptyWithin {
				s.EmptyWithin[k], s.FullWithin[k] = math.Nextafter(0.1, 1), math.Nextafter(0.2, 1)
			}
		}
		msgs := rk.Messages(f, ranked, StationsPerMessage)
		n := 0
		for i, m := range msgs {
			data, err := m.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > MessageBytes || m.Part != i || m.Parts != len(msgs) || len(m.Stations) > StationsPerMessage {
				t.Fatalf("capacity %d: part %d of %d, %d stations, %d bytes", capacity, m.Part, m.Parts, len(m.Stations), len(data))
			}
			for _, s := range m.Stations {
				if s.Station != ranked[n].Station {
					t.Fatalf("capacity %d: station %s at %d, want %s", capacity, s.Station, n, ranked[n].Station)
				}
				n++
			}
		}
		if n != len(ranked) {
			t.Fatalf("capacity %d: %d stations in the messages, want %d", capacity, n, len(ranked))
		}
		if capacity == 1000 && len(msgs) < 10 {
			t.Fatalf("capacity 1000: %d parts; the byte bound did not split", len(msgs))
		}
	}
}
