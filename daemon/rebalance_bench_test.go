package daemon

import (
	"context"
	"fmt"
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

// BenchmarkRebalanceBin is the daemon's risk step for one bin of a city
// (2,000 stations, capacities 10..80, horizon 24): both models' filtered
// messages turned into forecasts, every station's risk computed (the
// default quadrature, stations shared among GOMAXPROCS workers), encoded
// as risk messages and bucket entries.
func BenchmarkRebalanceBin(b *testing.B) {
	const n, h = 2000, 24
	start := time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	names := make([]string, n)
	samples := make([]stationstatus.Sample, n)
	for i := range names {
		names[i] = fmt.Sprintf("st-%04d", i)
		c := 10 + (i*7)%71
		bikes, docks := (i*13)%(c+1), c-(i*13)%(c+1)
		samples[i] = stationstatus.Sample{Station: names[i], BikesAvailable: bikes, DocksAvailable: &docks,
			Installed: true, Renting: true, Returning: true, LastReported: end.Add(-time.Minute)}
	}
	cfg := rebalance.DefaultConfig()
	cfg.Name, cfg.Pickups, cfg.Returns = "city", "pickups", "returns"
	job, err := rebalance.NewJob(cfg, names, nopRiskOut{}, nil, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	job.Ingest(&stationstatus.Message{Schema: 1, Feed: "city", At: end.Add(-time.Minute), Stations: samples})
	msg := func(shift int) *wire.LatentMessage {
		m := &wire.LatentMessage{Schema: wire.SchemaVersion, Kind: wire.KindFiltered, BinStart: start, BinEnd: end}
		for k := range h {
			fc := wire.Forecast{Horizon: k + 1, BinStart: end.Add(time.Duration(k) * time.Hour), BinEnd: end.Add(time.Duration(k+1) * time.Hour)}
			for i, name := range names {
				fc.Estimates = append(fc.Estimates, wire.Estimate{Product: name, Mean: 1 + float64((i*(1+shift))%9), Var: 0.5 + 0.1*float64((k+shift)%6)})
			}
			m.Forecasts = append(m.Forecasts, fc)
		}
		return m
	}
	pm, rm := msg(0), msg(4)
	b.ResetTimer()
	for b.Loop() {
		job.Take(context.Background(), flowForecast("pickups", names, pm))
		job.Take(context.Background(), flowForecast("returns", names, rm))
	}
}

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
