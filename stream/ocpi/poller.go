package ocpi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Config configures a Poller.
type Config struct {
	// URL is the locations endpoint (…/ocpi/2.2.1/locations).
	URL string
	// Token is the OCPI credentials token; it is sent base64-encoded as
	// `Authorization: Token <base64>` (OCPI 2.2). Empty: no header.
	Token string
	// Interval between polls; Timeout bounds each page's request.
	Interval, Timeout time.Duration
	// Limit is the page size asked for (the `limit` parameter; 0: the
	// server's default).
	Limit int
	// MaxAge refuses a response whose timestamp is older (0: no check).
	MaxAge time.Duration
	// MaxPages bounds one poll's pages (a Link loop is an error).
	MaxPages int
	// Refresh: a status unchanged for this long since it was last
	// published is published again, so that a reader of the last few
	// hours of statuses (the daemon after a restart) knows every EVSE
	// (0: never).
	Refresh time.Duration
	// ResponseClock takes each poll's time from its first page's
	// response timestamp instead of the poller's clock, for a recorded or
	// simulated feed that runs on its own clock (examples/ev-5min's
	// server). MaxAge is then not checked; a response without a
	// timestamp fails the poll (malformed), one not after the last
	// poll's too (stale_response).
	ResponseClock bool
}

// DefaultConfig polls once a minute, 10 s per page, pages of 100, at
// most 1,000 pages, responses at most 10 minutes old, unchanged statuses
// published again every hour.
func DefaultConfig() Config {
	return Config{Interval: time.Minute, Timeout: 10 * time.Second, Limit: 100, MaxAge: 10 * time.Minute, MaxPages: 1000, Refresh: time.Hour}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		return fmt.Errorf("ocpi: url: %w", err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("ocpi: url %q is not an http(s) URL", c.URL)
	case c.Interval <= 0 || c.Timeout <= 0:
		return fmt.Errorf("ocpi: interval %v and timeout %v must be positive", c.Interval, c.Timeout)
	case c.Limit < 0 || c.MaxAge < 0 || c.MaxPages < 1 || c.Refresh < 0:
		return fmt.Errorf("ocpi: limit %d, max_age %v, max_pages %d, refresh %v out of range", c.Limit, c.MaxAge, c.MaxPages, c.Refresh)
	}
	return nil
}

// Batch is what one successful poll hands to the Publisher.
type Batch struct {
	// Polled is when the poll began: every status change up to then is
	// in Changed or was in an earlier batch.
	Polled time.Time
	// Changed are the statuses that changed since the last batch;
	// Refreshed unchanged ones published again (Config.Refresh).
	Changed, Refreshed []StatusEvent
}

// Publisher receives each successful poll's batch (with no statuses,
// still a mark that the poll happened). An error keeps the statuses
// pending: the next poll offers them again.
type Publisher interface {
	Publish(ctx context.Context, b Batch) error
}

// Poll outcomes and failure reasons (the metrics' labels).
const (
	OutcomeOK        = "ok"
	ReasonTransport  = "transport"
	ReasonTimeout    = "timeout"
	ReasonHTTPStatus = "http_status"
	ReasonMalformed  = "malformed"
	ReasonOCPIStatus = "ocpi_status"
	ReasonStaleResp  = "stale_response"
	ReasonPagination = "pagination"
	ReasonPublish    = "publish"
)

// Metrics count polls by outcome and refused EVSEs by reason.
type Metrics struct {
	polls     *prometheus.CounterVec
	refused   *prometheus.CounterVec
	published prometheus.Counter
}

// NewMetrics registers the adapter's metrics with reg (nil: a private
// registry): dcgpd_ocpi_polls_total{outcome}, dcgpd_ocpi_evse_refused_total{reason},
// dcgpd_ocpi_statuses_published_total.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_ocpi_polls_total",
			Help: "OCPI locations polls by outcome: ok or the failure's reason."}, []string{"outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcgpd_ocpi_evse_refused_total",
			Help: "EVSE statuses refused from accepted pages, by reason."}, []string{"reason"}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "dcgpd_ocpi_statuses_published_total",
			Help: "EVSE statuses handed to the publisher."}),
	}
	reg.MustRegister(m.polls, m.refused, m.published)
	return m
}

// Poller polls an OCPI locations endpoint. It is used by one goroutine.
type Poller struct {
	cfg     Config
	client  *http.Client
	pub     Publisher
	log     zerolog.Logger
	metrics *Metrics
	now     func() time.Time
	// last holds each EVSE's last published status and when it was
	// published (key site + "\x00" + evse).
	last map[string]published
	// lastPolled is the last successful poll's time.
	lastPolled time.Time
}

type published struct {
	StatusEvent
	polled time.Time
}

// NewPoller validates cfg and returns a poller publishing to pub.
func NewPoller(cfg Config, pub Publisher, log zerolog.Logger, m *Metrics) (*Poller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	return &Poller{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout}, pub: pub, log: log, metrics: m,
		now: time.Now, last: map[string]published{}}, nil
}

// SetClock replaces the poller's clock (time.Now), for a replay of
// recorded responses on their own time. Call it before Run or Poll.
func (p *Poller) SetClock(now func() time.Time) { p.now = now }

// PollError is a failed poll: Reason is its metrics label.
type PollError struct {
	Reason string
	Err    error
}

func (e *PollError) Error() string { return fmt.Sprintf("ocpi poll (%s): %v", e.Reason, e.Err) }
func (e *PollError) Unwrap() error { return e.Err }

// Result is what one successful poll did.
type Result struct {
	Pages, Locations, Published int
	Problems                    []Problem
}

// Run polls every Interval until ctx is cancelled; a failed poll is
// logged and counted and the next one goes ahead. It returns ctx's error.
func (p *Poller) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn().Err(err).Str("url", p.cfg.URL).Msg("OCPI poll failed; retrying at the next interval")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Poll fetches every page once and publishes the statuses that changed.
// Nothing is published unless every page was read: a failed poll leaves
// the published state as it was.
func (p *Poller) Poll(ctx context.Context) (Result, error) {
	res, err := p.poll(ctx)
	if err != nil {
		var pe *PollError
		reason := ReasonTransport
		if errors.As(err, &pe) {
			reason = pe.Reason
		}
		p.metrics.polls.WithLabelValues(reason).Inc()
		return res, err
	}
	p.metrics.polls.WithLabelValues(OutcomeOK).Inc()
	return res, nil
}

func (p *Poller) poll(ctx context.Context) (Result, error) {
	var res Result
	var all []StatusEvent
	polled := p.now()
	next, err := p.firstURL()
	if err != nil {
		return res, &PollError{ReasonTransport, err}
	}
	total := -1
	for next != "" {
		if res.Pages == p.cfg.MaxPages {
			return res, &PollError{ReasonPagination, fmt.Errorf("more than %d pages (a Link loop?)", p.cfg.MaxPages)}
		}
		page, hdr, err := p.fetch(ctx, next)
		if err != nil {
			return res, err
		}
		if res.Pages == 0 && p.cfg.ResponseClock {
			if polled, err = p.responseTime(page); err != nil {
				return res, err
			}
		}
		res.Pages++
		res.Locations += page.Locations
		all = append(all, page.Statuses...)
		res.Problems = append(res.Problems, page.Problems...)
		if tc := hdr.Get("X-Total-Count"); tc != "" {
			if total, err = strconv.Atoi(tc); err != nil || total < 0 {
				return res, &PollError{ReasonPagination, fmt.Errorf("X-Total-Count %q is not a count", tc)}
			}
		}
		if next, err = nextLink(hdr, next); err != nil {
			return res, &PollError{ReasonPagination, err}
		}
	}
	if total >= 0 && res.Locations != total {
		return res, &PollError{ReasonPagination, fmt.Errorf("read %d locations, X-Total-Count says %d", res.Locations, total)}
	}
	b := p.changes(all, polled, &res)
	for _, pr := range res.Problems {
		p.metrics.refused.WithLabelValues(pr.Reason).Inc()
		p.log.Warn().Str("location", pr.Location).Str("evse", pr.EVSE).Str("reason", pr.Reason).Str("detail", pr.Detail).Msg("OCPI EVSE status refused")
	}
	if err := p.pub.Publish(ctx, b); err != nil {
		return res, &PollError{ReasonPublish, err}
	}
	for _, list := range [][]StatusEvent{b.Changed, b.Refreshed} {
		for _, s := range list {
			p.last[s.Site+"\x00"+s.EVSE] = published{s, polled}
		}
	}
	p.lastPolled = polled
	res.Published = len(b.Changed) + len(b.Refreshed)
	p.metrics.published.Add(float64(res.Published))
	return res, nil
}

// changes returns the poll's batch: the statuses that differ from the
// last published ones (in status or time), and those unchanged but last
// published Refresh or more before polled; one older than the last
// published is refused as stale.
func (p *Poller) changes(all []StatusEvent, polled time.Time, res *Result) Batch {
	b := Batch{Polled: polled}
	for _, s := range all {
		prev, ok := p.last[s.Site+"\x00"+s.EVSE]
		switch {
		case ok && s.At.Before(prev.At):
			res.Problems = append(res.Problems, Problem{Location: s.Site, EVSE: s.EVSE, Reason: ReasonStale,
				Detail: fmt.Sprintf("last_updated %s before the %s already published", s.At.Format(time.RFC3339), prev.At.Format(time.RFC3339))})
		case ok && s.At.Equal(prev.At) && s.Status == prev.Status:
			if p.cfg.Refresh > 0 && polled.Sub(prev.polled) >= p.cfg.Refresh {
				b.Refreshed = append(b.Refreshed, s)
			}
		default:
			b.Changed = append(b.Changed, s)
		}
	}
	return b
}

func (p *Poller) firstURL() (string, error) {
	u, err := url.Parse(p.cfg.URL)
	if err != nil {
		return "", err
	}
	if p.cfg.Limit > 0 {
		q := u.Query()
		q.Set("limit", strconv.Itoa(p.cfg.Limit))
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// fetch GETs one page and decodes it.
func (p *Poller) fetch(ctx context.Context, u string) (*Page, http.Header, error) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, &PollError{ReasonTransport, err}
	}
	if p.cfg.Token != "" {
		req.Header.Set("Authorization", "Token "+base64.StdEncoding.EncodeToString([]byte(p.cfg.Token)))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, nil, &PollError{ReasonTimeout, fmt.Errorf("GET %s: %w", u, err)}
		}
		return nil, nil, &PollError{ReasonTransport, fmt.Errorf("GET %s: %w", u, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes+1))
	if err != nil {
		reason := ReasonTransport
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			reason = ReasonTimeout
		}
		return nil, nil, &PollError{reason, fmt.Errorf("GET %s: reading the body: %w", u, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, &PollError{ReasonHTTPStatus, fmt.Errorf("GET %s: HTTP %d: %.200s", u, resp.StatusCode, body)}
	}
	maxAge := p.cfg.MaxAge
	if p.cfg.ResponseClock {
		maxAge = 0 // the response's clock is the poll's
	}
	page, err := Decode(body, p.now(), maxAge)
	if err != nil {
		reason := ReasonMalformed
		switch {
		case errors.Is(err, ErrStatus):
			reason = ReasonOCPIStatus
		case errors.Is(err, ErrStale):
			reason = ReasonStaleResp
		}
		return nil, nil, &PollError{reason, fmt.Errorf("GET %s: %w", u, err)}
	}
	return page, resp.Header, nil
}

// responseTime is the poll's time under ResponseClock: the first page's
// timestamp, which must be after the last poll's.
func (p *Poller) responseTime(page *Page) (time.Time, error) {
	switch {
	case page.Timestamp.IsZero():
		return time.Time{}, &PollError{ReasonMalformed, errors.New("the response has no timestamp, and the poll's time is taken from it")}
	case !page.Timestamp.After(p.lastPolled):
		return time.Time{}, &PollError{ReasonStaleResp, fmt.Errorf("response timestamp %s is not after the last poll's %s",
			page.Timestamp.Format(time.RFC3339Nano), p.lastPolled.Format(time.RFC3339Nano))}
	}
	return page.Timestamp, nil
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// linkNext matches the rel="next" target of a Link header.
var linkNext = regexp.MustCompile(`<([^>]*)>\s*;\s*rel="?next"?`)

// nextLink returns the absolute URL of the Link header's next page, or ""
// on the last page.
func nextLink(h http.Header, base string) (string, error) {
	for _, l := range h.Values("Link") {
		if m := linkNext.FindStringSubmatch(l); m != nil {
			b, err := url.Parse(base)
			if err != nil {
				return "", err
			}
			n, err := b.Parse(m[1])
			if err != nil {
				return "", fmt.Errorf("the Link header's next %q: %w", m[1], err)
			}
			return n.String(), nil
		}
	}
	return "", nil
}
