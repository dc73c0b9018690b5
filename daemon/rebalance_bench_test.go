package daemon

import (
	"context"
	"fmt"
	"github.com/dcgpd/dcgpd/internal/procstat"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"

	"github.com/dcgpd/dcgpd/stream/rebalance"
	"github.com/dcgpd/dcgpd/stream/stationstatus"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// nopRiskOut drops what a job publishes.
type nopRiskOut struct{}

func (nopRiskOut) PublishRisk(string, []byte) {}
func (nopRiskOut) PutRisk(string, []byte)     {}

// benchCity is the city of BenchmarkRebalanceBin: 2,000 stations of
// capacities 10..80 with a horizon of 24 bins.
type benchCity struct {
	names []string
	first time.Time // the first bin's start
}

const benchStations, benchHorizon = 2000, 24

func newBenchCity() *benchCity {
	c := &benchCity{names: make([]string, benchStations), first: time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)}
	for i := range c.names {
		c.names[i] = fmt.Sprintf("st-%04d", i)
	}
	return c
}

// bin returns bin k's input: the status message a minute before its end
// and both models' filtered messages. In bin k station i has the
// capacity, bikes and forecasts station (i + 37k) mod 2,000 had in bin 0,
// so every bin is new to every station (2,000 distinct bins in a cycle)
// while the city's workload, the multiset of station inputs, is the same
// in every bin: the time per bin does not depend on which bins b.N picks.
func (c *benchCity) bin(k int) (*stationstatus.Message, *wire.LatentMessage, *wire.LatentMessage) {
	start := c.first.Add(time.Duration(k) * time.Hour)
	end := start.Add(time.Hour)
	n := len(c.names)
	src := func(i int) int { return (i + 37*k) % n }
	st := &stationstatus.Message{Schema: 1, Feed: "city", At: end.Add(-time.Minute), Stations: make([]stationstatus.Sample, n)}
	for i, name := range c.names {
		j := src(i)
		capacity := 10 + (j*7)%71
		bikes, docks := (j*13)%(capacity+1), capacity-(j*13)%(capacity+1)
		st.Stations[i] = stationstatus.Sample{Station: name, BikesAvailable: bikes, DocksAvailable: &docks,
			Installed: true, Renting: true, Returning: true, LastReported: end.Add(-2 * time.Minute)}
	}
	msg := func(shift int) *wire.LatentMessage {
		m := &wire.LatentMessage{Schema: wire.SchemaVersion, Kind: wire.KindFiltered, BinStart: start, BinEnd: end}
		for h := range benchHorizon {
			fc := wire.Forecast{Horizon: h + 1, BinStart: end.Add(time.Duration(h) * time.Hour), BinEnd: end.Add(time.Duration(h+1) * time.Hour),
				Estimates: make([]wire.Estimate, n)}
			for i, name := range c.names {
				j := src(i)
				fc.Estimates[i] = wire.Estimate{Product: name, Mean: 1 + float64((j*(1+shift))%9), Var: 0.5 + 0.1*float64((h+shift+j)%6)}
			}
			m.Forecasts = append(m.Forecasts, fc)
		}
		return m
	}
	return st, msg(0), msg(4)
}

// BenchmarkRebalanceBin is the daemon's risk step for one new bin of a
// city per op (benchCity: 2,000 stations, capacities 10..80, horizon
// 24): both models' filtered messages turned into forecasts, every
// station's risk computed (the default quadrature, the stations shared
// among GOMAXPROCS workers), encoded as risk messages and bucket
// entries. Each op's input (a status message, two filtered messages) is
// built and the status ingested with the timer stopped; one bin is run
// before the timer to warm the workers' scratch. It reports ns/station
// (wall), cpu-ns/station (the process's CPU time over the timed part)
// and peak-RSS-MB (the process's maximum resident set so far). Run it
// with -cpu 1,2 for the speed-up.
func BenchmarkRebalanceBin(b *testing.B) {
	city := newBenchCity()
	cfg := rebalance.DefaultConfig()
	cfg.Name, cfg.Pickups, cfg.Returns = "city", "pickups", "returns"
	job, err := rebalance.NewJob(cfg, city.names, nopRiskOut{}, nil, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var cpu time.Duration
	step := func(k int) {
		st, pm, rm := city.bin(k)
		job.Ingest(st)
		b.StartTimer()
		c0 := procstat.CPU()
		job.Take(ctx, flowForecast("pickups", city.names, pm))
		job.Take(ctx, flowForecast("returns", city.names, rm))
		cpu += procstat.CPU() - c0
		b.StopTimer()
	}
	step(0)
	if r := job.Ranked(); r == nil || len(r.Stations) != benchStations || r.Stations[benchStations-1].Status != rebalance.StatusOK {
		b.Fatal("the warm-up bin did not give every station a risk")
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	cpu = 0
	for k := 1; k <= b.N; k++ {
		step(k)
	}
	ops := float64(b.N * benchStations)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops, "ns/station")
	b.ReportMetric(float64(cpu.Nanoseconds())/ops, "cpu-ns/station")
	b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-RSS-MB")
}

// TestBenchCityBins: each bin of BenchmarkRebalanceBin gives a station
// new input, and every bin holds the same station inputs, reordered.
func TestBenchCityBins(t *testing.T) {
	city := newBenchCity()
	st0, pm0, _ := city.bin(0)
	st1, pm1, _ := city.bin(1)
	if !st1.At.After(st0.At) || !pm1.BinStart.After(pm0.BinStart) {
		t.Fatal("bin 1 is not later than bin 0")
	}
	same, count := 0, map[string]int{}
	for i := range st0.Stations {
		a, b := st0.Stations[i], st1.Stations[i]
		if a.BikesAvailable == b.BikesAvailable && *a.DocksAvailable == *b.DocksAvailable && sameEstimate(pm0.Forecasts[0].Estimates[i], pm1.Forecasts[0].Estimates[i]) {
			same++
		}
		count[fmt.Sprint(a.BikesAvailable, *a.DocksAvailable, pm0.Forecasts[3].Estimates[i].Mean, pm0.Forecasts[3].Estimates[i].Var)]++
		count[fmt.Sprint(b.BikesAvailable, *b.DocksAvailable, pm1.Forecasts[3].Estimates[i].Mean, pm1.Forecasts[3].Estimates[i].Var)]--
	}
	if same > benchStations/20 {
		t.Errorf("%d of %d stations have the same input in bins 0 and 1", same, benchStations)
	}
	for k, v := range count {
		if v != 0 {
			t.Fatalf("input %s: %d more in bin 0 than in bin 1; the workload differs", k, v)
		}
	}
}

func sameEstimate(a, b wire.Estimate) bool { return a.Mean == b.Mean && a.Var == b.Var }

func TestJobConfigDefaults(t *testing.T) {
	w, hold := 0.5, config.Duration{Duration: 5 * time.Minute}
	rc := config.RebalanceConfig{Name: "city", Pickups: "p", Returns: "r", PlanningBins: 12, ReturnWeight: &w, MaxHold: hold}
	hour := config.Duration{Duration: time.Hour}
	p := config.ModelConfig{Bin: hour, Lateness: config.Duration{Duration: 4 * time.Hour}}
	r := config.ModelConfig{Bin: hour}
	c := jobConfig(&rc, &p, &r)
	want := rebalance.DefaultConfig()
	want.Name, want.Pickups, want.Returns, want.PlanningBins, want.ReturnWeight, want.MaxHold = "city", "p", "r", 12, 0.5, 5*time.Minute
	want.Retention = 2 * (5*time.Hour + 5*time.Minute) // two of the pickups' bin, lateness and hold: above the 6 h default
	if c != want {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
}
