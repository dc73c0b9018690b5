package rebalance

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"time"

	"github.com/dcgpd/dcgpd/inventory"
)

// FlowForecast is one model's forecasts as a bin closed: Mean[h][i] and
// Var[h][i] of the latent demand of station Products[i] in the h+1-th
// bin after it. A nil row (a missing forecast) leaves that bin unknown.
type FlowForecast struct {
	Model    string
	BinStart time.Time
	BinEnd   time.Time
	Products []string
	Mean     [][]float64
	Var      [][]float64
	// Missing is set (with the reason) when the bin's numerics failed.
	Missing string
}

// Risker computes the stations' risk from both flows' forecasts, the
// stations shared among Config.Workers workers (GOMAXPROCS when 0), each
// with its own inventory.Planner. It belongs to one goroutine.
type Risker struct {
	cfg     Config
	tracker *Tracker
	workers []*worker
}

// worker is one goroutine's chain and scratch.
type worker struct {
	planner *inventory.Planner
	risk    inventory.Risk
	lam, mu inventory.Forecast
}

// NewRisker returns a Risker reading inventory from tracker.
func NewRisker(cfg Config, tracker *Tracker) (*Risker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Risker{cfg: cfg, tracker: tracker}
	n := cfg.Workers
	if n == 0 {
		n = max(1, runtime.GOMAXPROCS(0))
	}
	for range n {
		pl, err := inventory.NewPlanner(cfg.inventoryConfig())
		if err != nil {
			return nil, err
		}
		r.workers = append(r.workers, &worker{planner: pl})
	}
	return r, nil
}

// Compute returns every station's risk for the bin both forecasts close
// (they must be for the same bin), ranked: stations with a risk first by
// Score (highest first), then the others by name. The records are the
// same bit for bit whatever the number of workers. When ctx ends first
// it stops the workers and returns ctx's error.
func (r *Risker) Compute(ctx context.Context, pickups, returns *FlowForecast) ([]StationRisk, error) {
	if !pickups.BinStart.Equal(returns.BinStart) {
		return nil, fmt.Errorf("rebalance %q: pickups bin %s and returns bin %s differ", r.cfg.Name,
			pickups.BinStart.Format(time.RFC3339), returns.BinStart.Format(time.RFC3339))
	}
	retIdx := make(map[string]int, len(returns.Products))
	for i, p := range returns.Products {
		retIdx[p] = i
	}
	out := make([]StationRisk, len(pickups.Products))
	done := r.share(ctx, len(out), func(wk *worker, i int) {
		name := pickups.Products[i]
		j, ok := retIdx[name]
		sr := &out[i]
		sr.Station, sr.Name = name, r.tracker.Name(name)
		switch {
		case !ok || pickups.Missing != "" || returns.Missing != "":
			sr.Status, sr.Detail = StatusNoForecast, firstNonEmpty(pickups.Missing, returns.Missing, "not a product of "+returns.Model)
		default:
			r.station(wk, sr, pickups, returns, i, j)
		}
	})
	if done < len(out) {
		return nil, fmt.Errorf("rebalance %q: stopped after %d of %d stations: %w", r.cfg.Name, done, len(out), context.Cause(ctx))
	}
	rank(out)
	return out, nil
}

// rank orders a bin's risks: stations with a risk first by Score
// (highest first), then the others by name.
func rank(out []StationRisk) {
	sort.SliceStable(out, func(a, b int) bool {
		oa, ob := out[a].Status == StatusOK, out[b].Status == StatusOK
		if oa != ob {
			return oa
		}
		if oa && out[a].Score != out[b].Score {
			return out[a].Score > out[b].Score
		}
		return out[a].Station < out[b].Station
	})
}

// station fills one station's risk, or the status saying why not.
func (r *Risker) station(wk *worker, sr *StationRisk, pickups, returns *FlowForecast, i, j int) {
	end := pickups.BinEnd
	st, at, ok := r.tracker.Latest(sr.Station, end)
	if !ok {
		sr.Status = StatusNoStatus
		return
	}
	sr.StatusAt = &at
	switch {
	case end.Sub(at) > r.cfg.MaxStatusAge:
		sr.Status, sr.Detail = StatusStale, fmt.Sprintf("newest status %s, %v before the bin's end", at.Format(time.RFC3339), end.Sub(at))
		return
	case !st.Installed || !st.Renting || !st.Returning:
		sr.Status, sr.Detail = StatusOutOfService, fmt.Sprintf("installed %v, renting %v, returning %v", st.Installed, st.Renting, st.Returning)
		return
	}
	capacity := 0
	switch {
	case st.DocksAvailable != nil:
		capacity = st.BikesAvailable + *st.DocksAvailable
	case st.Capacity != nil:
		capacity = *st.Capacity - st.BikesDisabled - st.DocksDisabled
	default:
		sr.Status = StatusNoCapacity
		return
	}
	sr.Capacity, sr.Bikes = capacity, st.BikesAvailable
	h := min(len(pickups.Mean), len(returns.Mean))
	wk.lam.Mean, wk.lam.Var = fill(wk.lam.Mean, wk.lam.Var, pickups, i, h)
	wk.mu.Mean, wk.mu.Var = fill(wk.mu.Mean, wk.mu.Var, returns, j, h)
	if wk.lam.Mean == nil || wk.mu.Mean == nil {
		sr.Status, sr.Detail = StatusNoForecast, "a forecast bin is missing"
		return
	}
	if err := wk.planner.Risk(&wk.risk, inventory.Station{Capacity: capacity, Bikes: st.BikesAvailable}, wk.lam, wk.mu); err != nil {
		sr.Status, sr.Detail = StatusError, err.Error()
		return
	}
	rk := &wk.risk
	sr.Status = StatusOK
	sr.EmptyWithin = append([]float64(nil), rk.EmptyWithin...)
	sr.FullWithin = append([]float64(nil), rk.FullWithin...)
	sr.UDF = append([]float64(nil), rk.UDF...)
	sr.UnmetPickups, sr.UnmetReturns = rk.UnmetPickups, rk.UnmetReturns
	sr.Best, sr.OneMore, sr.OneLess, sr.CanAdd, sr.CanRemove = rk.Best, rk.OneMore, rk.OneLess, rk.CanAdd, rk.CanRemove
	p := h
	if r.cfg.PlanningBins > 0 {
		p = min(r.cfg.PlanningBins, h)
	}
	sr.Score = math.Max(rk.EmptyWithin[p-1], rk.FullWithin[p-1])
	r.act(sr, end.Sub(pickups.BinStart), r.RiskBins(pickups, h), end)
}

// RiskBins is the risk horizon in bins of f's width over h forecast
// bins.
func (r *Risker) RiskBins(f *FlowForecast, h int) int {
	return riskBins(r.cfg.RiskHorizon, f.BinEnd.Sub(f.BinStart), h)
}

// fill copies station i's forecast over h bins into mean and vars (nil
// when a bin is missing).
func fill(mean, vars []float64, f *FlowForecast, i, h int) ([]float64, []float64) {
	mean, vars = mean[:0], vars[:0]
	for k := range h {
		if f.Mean[k] == nil || i >= len(f.Mean[k]) {
			return nil, nil
		}
		mean, vars = append(mean, f.Mean[k][i]), append(vars, f.Var[k][i])
	}
	return mean, vars
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Messages splits a bin's ranked risks into messages of at most per
// stations and about MessageBytes of JSON each (a station's size grows
// with its capacity and the horizon).
func (r *Risker) Messages(pickups *FlowForecast, ranked []StationRisk, per int) []RiskMessage {
	h := min(len(pickups.Mean), len(pickups.Var))
	planning := r.cfg.PlanningBins
	if planning == 0 {
		planning = h
	}
	var bounds []int // each part's first station
	size := 0
	for i := range ranked {
		n := stationBytes(&ranked[i])
		if i == 0 || i-bounds[len(bounds)-1] == per || size+n > MessageBytes {
			bounds, size = append(bounds, i), 0
		}
		size += n
	}
	if len(bounds) == 0 {
		bounds = []int{0}
	}
	msgs := make([]RiskMessage, 0, len(bounds))
	for p, lo := range bounds {
		hi := len(ranked)
		if p+1 < len(bounds) {
			hi = bounds[p+1]
		}
		msgs = append(msgs, RiskMessage{Schema: SchemaVersion, Name: r.cfg.Name, BinStart: pickups.BinStart.UTC(), BinEnd: pickups.BinEnd.UTC(),
			Horizon: h, PlanningBins: planning, RiskBins: r.RiskBins(pickups, h), UrgencyThreshold: r.cfg.UrgencyThreshold, Part: p, Parts: len(bounds), Stations: ranked[lo:hi]})
	}
	return msgs
}

// MessageBytes bounds a risk message's JSON, about: half the 1 MiB a
// NATS server takes by default.
const MessageBytes = 512 << 10

// stationBytes bounds a station's JSON: at most 25 bytes a number (the
// longest float64 JSON with its comma) and 600 for the names and
// the rest.
func stationBytes(s *StationRisk) int {
	return 600 + len(s.Station) + len(s.Name) + len(s.Detail) + 25*(len(s.UDF)+len(s.EmptyWithin)+len(s.FullWithin))
}
