package query

import (
	"encoding/json"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// Query is the request body of the dcgpd service's endpoints.
type Query struct {
	Model   string `json:"model"`
	Product string `json:"product,omitempty"`
}

// EstimateReply answers dcgpd.estimate: the newest filtered estimate of
// one product (or all, when Product is empty) with its forecasts.
type EstimateReply struct {
	Model     string          `json:"model"`
	BinStart  string          `json:"bin_start"`
	BinEnd    string          `json:"bin_end"`
	Estimates []wire.Estimate `json:"estimates"`
	Forecasts []wire.Forecast `json:"forecasts,omitempty"`
}

// StatusReply answers dcgpd.status: the model's Status, its fields at the
// top level as before, plus the build of the daemon answering.
type StatusReply struct {
	stream.Status
	Build wire.Build `json:"build"`
}

// Service subjects.
const (
	EstimateSubject = "dcgpd.estimate"
	StatusSubject   = "dcgpd.status"
)

// Runners finds the runner of a model this instance runs (nil: none).
type Runners interface {
	Runner(name string) *stream.Runner
}

// Start registers the NATS micro service "dcgpd". Its handlers read the
// models' atomically swapped views, so they never wait for a bin in
// progress or a re-smooth.
func Start(nc *nats.Conn, d Runners) (micro.Service, error) {
	svc, err := micro.AddService(nc, micro.Config{Name: "dcgpd", Version: "1.0.0",
		Description: "latent demand estimates and model status"})
	if err != nil {
		return nil, err
	}
	lookup := func(req micro.Request) (*stream.Runner, *Query, bool) {
		var q Query
		if err := json.Unmarshal(req.Data(), &q); err != nil {
			_ = req.Error("400", "request must be JSON {\"model\": ..., \"product\": ...}", nil)
			return nil, nil, false
		}
		r := d.Runner(q.Model)
		if r == nil {
			_ = req.Error("404", "unknown model "+q.Model, nil)
			return nil, nil, false
		}
		return r, &q, true
	}
	if err := svc.AddEndpoint("estimate", micro.HandlerFunc(func(req micro.Request) {
		r, q, ok := lookup(req)
		if !ok {
			return
		}
		v := r.View()
		if v == nil || v.Latest == nil || v.Latest.Missing != "" && len(v.Latest.Estimates) == 0 {
			_ = req.Error("404", "no estimate yet for model "+q.Model, nil)
			return
		}
		rep, ok := selectProduct(v.Latest, q.Product)
		if !ok {
			_ = req.Error("404", "unknown product "+q.Product, nil)
			return
		}
		_ = req.RespondJSON(rep)
	}), micro.WithEndpointSubject(EstimateSubject)); err != nil {
		return nil, err
	}
	if err := svc.AddEndpoint("status", micro.HandlerFunc(func(req micro.Request) {
		r, _, ok := lookup(req)
		if !ok {
			return
		}
		_ = req.RespondJSON(StatusReply{Status: r.View().Status, Build: wire.ReadBuild()})
	}), micro.WithEndpointSubject(StatusSubject)); err != nil {
		return nil, err
	}
	return svc, nil
}

// selectProduct narrows a filtered message to one product.
func selectProduct(m *wire.LatentMessage, product string) (*EstimateReply, bool) {
	rep := &EstimateReply{Model: m.Model, BinStart: m.BinStart.Format(timeFormat), BinEnd: m.BinEnd.Format(timeFormat)}
	if product == "" {
		rep.Estimates, rep.Forecasts = m.Estimates, m.Forecasts
		return rep, true
	}
	idx := -1
	for i, e := range m.Estimates {
		if e.Product == product {
			idx = i
		}
	}
	if idx < 0 {
		return nil, false
	}
	rep.Estimates = []wire.Estimate{m.Estimates[idx]}
	for _, f := range m.Forecasts {
		f.Estimates = []wire.Estimate{f.Estimates[idx]}
		rep.Forecasts = append(rep.Forecasts, f)
	}
	return rep, true
}

const timeFormat = "2006-01-02T15:04:05Z07:00"
