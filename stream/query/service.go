package query

import (
	"context"
	"encoding/json"
	"strings"
	"time"

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

// Runners is what the service reads of the daemon: the runner of a model
// this instance runs (nil: none), and, in cluster mode, the instance that
// runs a model this one does not ("" when none does).
type Runners interface {
	Runner(name string) *stream.Runner
	Where(ctx context.Context, model string) string
	// Models lists every configured model, in configuration order.
	Models() []string
}

// ModelsReply answers a request that names no model ({}): the configured
// models, in configuration order.
type ModelsReply struct {
	Models []string `json:"models"`
}

// forwardWait bounds how long a request forwarded to the instance that
// runs the model waits for its answer.
const forwardWait = 5 * time.Second

// Start registers the NATS micro service "dcgpd". Its handlers read the
// models' atomically swapped views, so they never wait for a bin in
// progress or a re-smooth.
//
// In cluster mode (instance not "") every instance answers on the shared
// subjects (one of them, at random, takes each request): a request for a
// model another instance runs is forwarded to that instance's own
// subject (<subject>.<instance>), which only ever answers locally, and
// its answer relayed.
func Start(nc *nats.Conn, d Runners, instance string) (micro.Service, error) {
	svc, err := micro.AddService(nc, micro.Config{Name: "dcgpd", Version: "1.0.0",
		Description: "latent demand estimates and model status"})
	if err != nil {
		return nil, err
	}
	type answer func(req micro.Request, r *stream.Runner, q *Query)
	estimate := func(req micro.Request, r *stream.Runner, q *Query) {
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
	}
	status := func(req micro.Request, r *stream.Runner, _ *Query) {
		_ = req.RespondJSON(StatusReply{Status: r.View().Status, Build: wire.ReadBuild()})
	}
	// handle answers a request for a model run here; one for a model run
	// elsewhere is forwarded when forward is set.
	handle := func(subject string, fn answer, forward bool) micro.HandlerFunc {
		return func(req micro.Request) {
			var q Query
			if err := json.Unmarshal(req.Data(), &q); err != nil {
				_ = req.Error("400", "request must be JSON {\"model\": ..., \"product\": ...}", nil)
				return
			}
			if q.Model == "" {
				_ = req.RespondJSON(ModelsReply{Models: d.Models()})
				return
			}
			if r := d.Runner(q.Model); r != nil {
				fn(req, r, &q)
				return
			}
			if instance == "" {
				_ = req.Error("404", "unknown model "+q.Model, nil)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), forwardWait)
			defer cancel()
			owner := d.Where(ctx, q.Model)
			switch {
			case owner == "" || owner == instance:
				_ = req.Error("404", "unknown model "+q.Model+", or no instance runs it now (its lease is vacant or it is starting)", nil)
			case !forward:
				_ = req.Error("404", "model "+q.Model+" runs on instance "+owner+", not on "+instance, nil)
			default:
				msg, err := nc.RequestWithContext(ctx, subject+"."+owner, req.Data())
				if err != nil {
					_ = req.Error("503", "model "+q.Model+" runs on instance "+owner+", which did not answer: "+err.Error(), nil)
					return
				}
				_ = req.Respond(msg.Data, micro.WithHeaders(micro.Headers(msg.Header)))
			}
		}
	}
	for _, e := range []struct {
		name, subject string
		fn            answer
	}{{"estimate", EstimateSubject, estimate}, {"status", StatusSubject, status}} {
		if err := svc.AddEndpoint(e.name, handle(e.subject, e.fn, true), micro.WithEndpointSubject(e.subject)); err != nil {
			return nil, err
		}
		if instance == "" {
			continue
		}
		if err := svc.AddEndpoint(e.name+"-"+endpointToken(instance), handle(e.subject, e.fn, false),
			micro.WithEndpointSubject(e.subject+"."+instance)); err != nil {
			return nil, err
		}
	}
	return svc, nil
}

// endpointToken makes an instance name a valid endpoint name (letters,
// digits, - and _): a default name carries the host's, which may hold
// dots.
func endpointToken(instance string) string {
	return strings.Map(func(c rune) rune {
		if c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return c
		}
		return '_'
	}, instance)
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
