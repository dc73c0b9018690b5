package page

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// pageFiles is the operator's page: plain HTML, CSS and JavaScript drawing
// SVG, no external assets.
//
//go:embed static
var pageFiles embed.FS

// Bins bounds the estimated bins the operator's page keeps per model
// (about 200 bytes per product and bin), whatever the history's length;
// observations of bins not yet estimated are kept too, at most the
// model's max_ahead bins of them.
const Bins = 168

// Source is what the page reads of the daemon.
type Source interface {
	// Started is closed once the daemon has restored its models.
	Started() <-chan struct{}
	// Runners returns the runners of the models this instance runs.
	Runners() []*stream.Runner
	// Runner returns one model's runner, or nil.
	Runner(name string) *stream.Runner
}

// Options say where the page reads the models' traffic: nc (nil: the
// page shows the read views only), the subjects' prefix, and the log its
// warnings go to.
type Options struct {
	NC     *nats.Conn
	Prefix string
	Log    zerolog.Logger
}

// Register adds the operator's page at / and its JSON at /api/models and
// /api/models/{model} to mux.
func Register(mux *http.ServeMux, models Source, o Options) {
	rec := newPageRecorder(models, o)
	static, _ := fs.Sub(pageFiles, "static")
	mux.Handle("/", http.FileServerFS(static))
	mux.HandleFunc("/api/models", func(w http.ResponseWriter, _ *http.Request) {
		if !rec.start() {
			http.Error(w, "starting: models not restored yet", http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, rec.index())
	})
	mux.HandleFunc("/api/models/{model}", func(w http.ResponseWriter, req *http.Request) {
		if !rec.start() {
			http.Error(w, "starting: models not restored yet", http.StatusServiceUnavailable)
			return
		}
		m, ok := rec.model(req.PathValue("model"))
		if !ok {
			http.Error(w, "unknown model "+req.PathValue("model"), http.StatusNotFound)
			return
		}
		writeJSON(w, m)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// pageRecorder keeps, per model, the recent bins' observations and
// estimates for the page. It starts recording when the page or its JSON
// is first requested: it then seeds each model from its read view,
// subscribes to the input and output subjects on the daemon's connection
// and reads the recent past from the streams (backfill), so a daemon
// nobody watches pays nothing for the page.
type pageRecorder struct {
	m     Source
	o     Options
	once  sync.Once
	since time.Time
	mu    sync.Mutex
	rings map[string]*pageRing
}

func newPageRecorder(m Source, o Options) *pageRecorder {
	return &pageRecorder{m: m, o: o, rings: map[string]*pageRing{}}
}

// start begins recording once the daemon has started its models (the
// runners do not exist before) and reports whether it has. A failure to
// subscribe is logged; the page then shows the read views only.
func (p *pageRecorder) start() bool {
	select {
	case <-p.m.Started():
	default:
		return false
	}
	p.once.Do(func() {
		p.mu.Lock()
		p.since = time.Now().UTC()
		for _, r := range p.m.Runners() {
			cfg := r.Config()
			ring := newPageRing(r.Products(), cfg.Bin.Duration, cfg.MaxAhead)
			if v := r.View(); v != nil && v.Latest != nil {
				ring.addLatent(v.Latest)
			}
			p.rings[r.Name()] = ring
		}
		p.mu.Unlock()
		if p.o.NC == nil {
			return
		}
		prefix := p.o.Prefix
		for _, s := range []struct {
			subj string
			fn   nats.MsgHandler
		}{{prefix + ".obs.*", p.onObs}, {prefix + ".latent.*", p.onLatent}} {
			if _, err := p.o.NC.Subscribe(s.subj, s.fn); err != nil {
				p.o.Log.Warn().Err(err).Str("subject", s.subj).Msg("operator page: subscribe")
			}
		}
		// Once the server holds the subscriptions, whatever the backfill
		// does not read arrives live.
		_ = p.o.NC.Flush()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.backfill(ctx)
	})
	return true
}

func (p *pageRecorder) onObs(msg *nats.Msg) {
	m, err := wire.DecodeObs(msg.Data)
	if err != nil || m.BinStart == nil {
		return // refused input, or a watermark: nothing to draw
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ring := p.rings[m.Model]; ring != nil && strings.HasSuffix(msg.Subject, "."+m.Model) {
		ring.addObs(*m.BinStart, m.Observations)
	}
}

func (p *pageRecorder) onLatent(msg *nats.Msg) {
	var m wire.LatentMessage
	if err := json.Unmarshal(msg.Data, &m); err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ring := p.rings[m.Model]; ring != nil {
		ring.addLatent(&m)
	}
}

// pageIndex lists the models for the page's menu.
type pageIndex struct {
	Models []pageIndexModel `json:"models"`
	Build  wire.Build       `json:"build"`
}

type pageIndexModel struct {
	Model    string   `json:"model"`
	Products []string `json:"products"`
}

func (p *pageRecorder) index() pageIndex {
	out := pageIndex{Build: wire.ReadBuild()}
	for _, r := range p.m.Runners() {
		out.Models = append(out.Models, pageIndexModel{Model: r.Name(), Products: r.Products()})
	}
	return out
}

// model returns the page's view of one model.
func (p *pageRecorder) model(name string) (*Model, bool) {
	r := p.m.Runner(name)
	if r == nil {
		return nil, false
	}
	p.mu.Lock()
	out := p.rings[name].export(name, p.since)
	p.mu.Unlock() // export cannot panic: rings hold every runner's model
	if v := r.View(); v != nil {
		st := v.Status
		out.Status = &st
	}
	return out, true
}
