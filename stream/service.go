package stream

import (
	"encoding/json"
	"runtime/debug"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Query is the request body of the dcgpd service's endpoints.
type Query struct {
	Model   string `json:"model"`
	Product string `json:"product,omitempty"`
}

// EstimateReply answers dcgpd.estimate: the newest filtered estimate of
// one product (or all, when Product is empty) with its forecasts.
type EstimateReply struct {
	Model     string     `json:"model"`
	BinStart  string     `json:"bin_start"`
	BinEnd    string     `json:"bin_end"`
	Estimates []Estimate `json:"estimates"`
	Forecasts []Forecast `json:"forecasts,omitempty"`
}

// StatusReply answers dcgpd.status: the model's Status, its fields at the
// top level as before, plus the build of the daemon answering.
type StatusReply struct {
	Status
	Build Build `json:"build"`
}

// Build identifies the running binary, from runtime/debug.ReadBuildInfo.
type Build struct {
	// Version is the main module's version: "(devel)" for a build from a
	// work tree (go build, go run), a tag or pseudo-version for go install
	// module@version.
	Version string `json:"version"`
	// Revision is the VCS commit, "unknown" when the build carries no VCS
	// information (go run, -buildvcs=false, or no git at build time).
	Revision string `json:"revision"`
	// Modified reports uncommitted changes in the work tree at build time.
	Modified  bool   `json:"modified,omitempty"`
	Time      string `json:"vcs_time,omitempty"`
	GoVersion string `json:"go_version"`
}

// ReadBuild returns the running binary's build information.
func ReadBuild() Build { return buildFrom(debug.ReadBuildInfo()) }

// buildFrom extracts Build from bi; ok false (a binary built without
// module support) gives "unknown" for everything but the Go version.
func buildFrom(bi *debug.BuildInfo, ok bool) Build {
	b := Build{Version: "unknown", Revision: "unknown", GoVersion: "unknown"}
	if !ok || bi == nil {
		return b
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "vcs.time":
			b.Time = s.Value
		}
	}
	return b
}

// Service subjects.
const (
	EstimateSubject = "dcgpd.estimate"
	StatusSubject   = "dcgpd.status"
)

// startService registers the NATS micro service "dcgpd". Its handlers
// read the models' atomically swapped views, so they never wait for a
// bin in progress or a re-smooth.
func startService(nc *nats.Conn, d *Daemon) (micro.Service, error) {
	svc, err := micro.AddService(nc, micro.Config{Name: "dcgpd", Version: "1.0.0",
		Description: "latent demand estimates and model status"})
	if err != nil {
		return nil, err
	}
	lookup := func(req micro.Request) (*Runner, *Query, bool) {
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
		_ = req.RespondJSON(StatusReply{Status: r.View().Status, Build: ReadBuild()})
	}), micro.WithEndpointSubject(StatusSubject)); err != nil {
		return nil, err
	}
	return svc, nil
}

// selectProduct narrows a filtered message to one product.
func selectProduct(m *LatentMessage, product string) (*EstimateReply, bool) {
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
	rep.Estimates = []Estimate{m.Estimates[idx]}
	for _, f := range m.Forecasts {
		f.Estimates = []Estimate{f.Estimates[idx]}
		rep.Forecasts = append(rep.Forecasts, f)
	}
	return rep, true
}

const timeFormat = "2006-01-02T15:04:05Z07:00"
