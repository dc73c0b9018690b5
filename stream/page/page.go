package page

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"slices"
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

// Source is what the page reads of the daemon. In cluster mode the
// models this instance runs change as leases move: every method must be
// safe to call at any time, from any goroutine.
type Source interface {
	// Started is closed once the daemon has restored its models.
	Started() <-chan struct{}
	// Runners returns the runners of the models this instance runs now.
	Runners() []*stream.Runner
	// Runner returns the runner of a model this instance runs now, or nil.
	Runner(name string) *stream.Runner
	// Models lists every configured model, in configuration order.
	Models() []string
	// Where returns the instance that runs a model this instance does
	// not ("" when none does, or outside cluster mode).
	Where(ctx context.Context, model string) string
}

// Options say where the page reads the models' traffic: nc (nil: the
// page shows the read views only), the subjects' prefix, and the log its
// warnings go to.
type Options struct {
	NC     *nats.Conn
	Prefix string
	Log    zerolog.Logger
	// Instance names this instance in cluster mode ("" otherwise).
	Instance string
	// Context owns the page's backfills (the daemon's): they run until
	// it ends, whoever asked first. Nil: context.Background().
	Context context.Context
}

// Register adds the operator's page at / and its JSON at /api/models and
// /api/models/{model} to mux. wait returns once the page's backfills have
// ended (end Options.Context first).
func Register(mux *http.ServeMux, models Source, o Options) (wait func()) {
	rec := newPageRecorder(models, o)
	static, _ := fs.Sub(pageFiles, "static")
	mux.Handle("/", http.FileServerFS(static))
	mux.HandleFunc("/api/models", func(w http.ResponseWriter, req *http.Request) {
		if !rec.start() {
			http.Error(w, "starting: models not restored yet", http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, rec.index(req.Context()))
	})
	mux.HandleFunc("/api/models/{model}", func(w http.ResponseWriter, req *http.Request) {
		if !rec.start() {
			http.Error(w, "starting: models not restored yet", http.StatusServiceUnavailable)
			return
		}
		name := req.PathValue("model")
		m, ok := rec.model(req.Context(), name)
		if !ok {
			http.Error(w, rec.notHere(req.Context(), name), http.StatusNotFound)
			return
		}
		writeJSON(w, m)
	})
	return rec.wg.Wait
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
	ctx   context.Context // Options.Context: the backfills' owner
	wg    sync.WaitGroup  // the running backfills
	once  sync.Once
	since time.Time
	mu    sync.Mutex
	rings map[string]*pageRing
	fills map[string]*fill
}

func newPageRecorder(m Source, o Options) *pageRecorder {
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return &pageRecorder{m: m, o: o, ctx: ctx, rings: map[string]*pageRing{}, fills: map[string]*fill{}}
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
		// Once the server holds the subscriptions, whatever a ring's
		// backfill does not read arrives live.
		_ = p.o.NC.Flush()
	})
	return true
}

// ring returns the model's ring, making it (seeded from the runner's
// read view, then backfilled from the streams) the first time the page
// sees the model run here: at the page's first request, or when this
// instance takes the model over later. The backfill is the page's
// (startFill): the request waits for it while the request lasts, and
// one that failed is tried again. p.mu must not be held.
func (p *pageRecorder) ring(ctx context.Context, r *stream.Runner) *pageRing {
	p.mu.Lock()
	g := p.rings[r.Name()]
	if g == nil {
		cfg := r.Config()
		g = newPageRing(r.Products(), cfg.Bin.Duration, cfg.MaxAhead)
		if v := r.View(); v != nil && v.Latest != nil {
			g.addLatent(v.Latest)
		}
		p.rings[r.Name()] = g
	}
	p.mu.Unlock()
	if p.o.NC != nil {
		awaitFill(ctx, p.startFill(r))
	}
	return g
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

// pageIndex lists the models for the page's menu: those this instance
// runs, and (cluster mode) where the others run.
type pageIndex struct {
	Instance  string           `json:"instance,omitempty"`
	Models    []pageIndexModel `json:"models"`
	Elsewhere []pageElsewhere  `json:"elsewhere,omitempty"`
	Build     wire.Build       `json:"build"`
}

// pageElsewhere is a configured model this instance does not run:
// Instance runs it ("" none, while its lease is vacant).
type pageElsewhere struct {
	Model    string `json:"model"`
	Instance string `json:"instance"`
}

type pageIndexModel struct {
	Model    string   `json:"model"`
	Products []string `json:"products"`
}

func (p *pageRecorder) index(ctx context.Context) pageIndex {
	out := pageIndex{Instance: p.o.Instance, Build: wire.ReadBuild()}
	here := map[string]bool{}
	for _, r := range p.m.Runners() {
		here[r.Name()] = true
		out.Models = append(out.Models, pageIndexModel{Model: r.Name(), Products: r.Products()})
	}
	for _, name := range p.m.Models() {
		if !here[name] {
			out.Elsewhere = append(out.Elsewhere, pageElsewhere{Model: name, Instance: p.m.Where(ctx, name)})
		}
	}
	return out
}

// notHere says why a model's page is not served here: another instance
// runs it, none does, or no such model is configured.
func (p *pageRecorder) notHere(ctx context.Context, name string) string {
	if !slices.Contains(p.m.Models(), name) {
		return "unknown model " + name
	}
	if inst := p.m.Where(ctx, name); inst != "" {
		return "model " + name + " runs on instance " + inst + ", not on this one"
	}
	return "model " + name + " runs on no instance now (its lease is vacant or it is starting)"
}

// model returns the page's view of one model this instance runs.
func (p *pageRecorder) model(ctx context.Context, name string) (*Model, bool) {
	r := p.m.Runner(name)
	if r == nil {
		return nil, false
	}
	g := p.ring(ctx, r)
	p.mu.Lock()
	out := g.export(name, p.since)
	p.mu.Unlock()
	if v := r.View(); v != nil {
		st := v.Status
		out.Status = &st
	}
	return out, true
}
