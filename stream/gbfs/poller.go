package gbfs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// Config is a poller's configuration; start from DefaultConfig.
type Config struct {
	// URL is the system's auto-discovery file (gbfs.json).
	URL string
	// Feed names the system on the output subject <Prefix>.status.<Feed>.
	Feed string
	// Prefix is the daemon's subject prefix.
	Prefix string
	// Language picks a 2.3 feed list and 3.0 station names.
	Language string
	// MinInterval and MaxInterval bound the poll interval, which is
	// station_status's ttl (ttl 0 polls every MinInterval).
	MinInterval, MaxInterval time.Duration
	// MaxBackoff bounds the wait after failed polls: it doubles from
	// MinInterval with each failure in a row (jittered), or is the
	// server's Retry-After if longer.
	MaxBackoff time.Duration
	// RefreshInterval bounds how long gbfs.json and station_information
	// are kept before they are read again (their ttl if shorter).
	RefreshInterval time.Duration
	// Timeout bounds each HTTP request.
	Timeout time.Duration
	// MaxFeedAge refuses a station_status whose last_updated is older.
	MaxFeedAge time.Duration
	// MaxReportAge skips a station whose last_reported is older than
	// this before the file's last_updated.
	MaxReportAge time.Duration
	// MaxClockSkew is how far a last_updated may lie ahead of the
	// poller's clock; a snapshot further ahead is published stamped at
	// the poller's clock (counted, logged), so that a stamp from the
	// future does not make the later snapshots look older.
	MaxClockSkew time.Duration
	// WarnInterval bounds how often a condition that lasts (a failing
	// feed, a clock ahead, the same stations skipped) is logged again:
	// once when it starts, at most once per WarnInterval while it lasts.
	WarnInterval time.Duration
	// MaxBodyBytes refuses larger files.
	MaxBodyBytes int64
	// PublishUninformed publishes, without capacity, the stations of
	// station_status absent from station_information; by default they
	// are skipped (counted and logged).
	PublishUninformed bool
	// StationsPerMessage splits a snapshot into messages of at most this
	// many stations (each well under the daemon's 1 MiB limit).
	StationsPerMessage int
}

// DefaultConfig is the configuration `dcgpd gbfs` starts from.
func DefaultConfig() Config {
	return Config{
		Prefix:             "dcgp",
		Language:           "en",
		MinInterval:        10 * time.Second,
		MaxInterval:        5 * time.Minute,
		MaxBackoff:         15 * time.Minute,
		RefreshInterval:    time.Hour,
		Timeout:            10 * time.Second,
		MaxFeedAge:         5 * time.Minute,
		MaxReportAge:       time.Hour,
		MaxClockSkew:       5 * time.Minute,
		WarnInterval:       10 * time.Minute,
		MaxBodyBytes:       32 << 20,
		StationsPerMessage: 1000,
	}
}

// Validate reports the first unusable setting.
func (c *Config) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("gbfs: url %q: want the absolute http(s) URL of gbfs.json", c.URL)
	case c.Feed == "" || strings.ContainsAny(c.Feed, ".*> \t\r\n"):
		return fmt.Errorf("gbfs: feed %q: want a non-empty subject token (no dots, spaces or wildcards)", c.Feed)
	case c.Prefix == "" || strings.ContainsAny(c.Prefix, "*> \t\r\n"):
		return fmt.Errorf("gbfs: prefix %q: want a subject prefix without spaces or wildcards", c.Prefix)
	case c.MinInterval <= 0 || c.MaxInterval < c.MinInterval:
		return fmt.Errorf("gbfs: intervals %v..%v: want 0 < min-interval <= max-interval", c.MinInterval, c.MaxInterval)
	case c.MaxBackoff < c.MinInterval:
		return fmt.Errorf("gbfs: max backoff %v: want at least the min-interval %v", c.MaxBackoff, c.MinInterval)
	case c.RefreshInterval < c.MinInterval:
		return fmt.Errorf("gbfs: refresh interval %v: want at least the min-interval %v", c.RefreshInterval, c.MinInterval)
	case c.Timeout <= 0:
		return fmt.Errorf("gbfs: timeout %v: want > 0", c.Timeout)
	case c.MaxFeedAge <= 0 || c.MaxReportAge <= 0:
		return fmt.Errorf("gbfs: max feed age %v and max report age %v: want > 0", c.MaxFeedAge, c.MaxReportAge)
	case c.MaxClockSkew < 0:
		return fmt.Errorf("gbfs: max clock skew %v: want >= 0", c.MaxClockSkew)
	case c.WarnInterval <= 0:
		return fmt.Errorf("gbfs: warn interval %v: want > 0", c.WarnInterval)
	case c.MaxBodyBytes <= 0:
		return fmt.Errorf("gbfs: max body bytes %d: want > 0", c.MaxBodyBytes)
	case c.StationsPerMessage <= 0 || c.StationsPerMessage > 2000:
		return fmt.Errorf("gbfs: stations per message %d: want 1..2000 (a message must stay under 1 MiB)", c.StationsPerMessage)
	}
	return nil
}

// Subject is where the status messages go.
func (c *Config) Subject() string { return c.Prefix + ".status." + c.Feed }

// Poller polls one GBFS system and publishes its station status. Run it
// in one goroutine; it returns when its context ends.
type Poller struct {
	cfg    Config
	pub    Publisher
	met    *Metrics
	log    zerolog.Logger
	client *http.Client
	now    func() time.Time
	jitter func() float64 // in [0, 1): spreads the backoff

	disc      *Discovery
	discAt    time.Time
	info      map[string]StationInfo
	infoAt    time.Time
	track     tracker
	lastStamp time.Time // last_updated of the newest snapshot processed
	lastAt    time.Time // the time it is published at (lastStamp unless ahead)
	pending   [][]byte  // its messages, stored up to sent
	sent      int
	ahead     episode // last_updated ahead of the clock by more than MaxClockSkew
	issueLog  map[issueKey]issueLogged
	failures  int                 // failed polls in a row
	failing   episode             // those failures, for the log
	refreshes map[string]*episode // failed re-reads of a file whose copy is kept
	unstored  episode             // polls whose status the daemon did not store
	lost      int                 // snapshots superseded unstored in that run
}

// Option adjusts a Poller (for tests: a clock, an HTTP client).
type Option func(*Poller)

// WithClock makes the poller read the time from now.
func WithClock(now func() time.Time) Option { return func(p *Poller) { p.now = now } }

// WithJitter makes the poller spread its backoff with jitter, which
// returns a number in [0, 1) (default: math/rand/v2's Float64).
func WithJitter(jitter func() float64) Option { return func(p *Poller) { p.jitter = jitter } }

// WithHTTPClient makes the poller use c.
func WithHTTPClient(c *http.Client) Option { return func(p *Poller) { p.client = c } }

// NewPoller checks cfg and returns a poller publishing through pub.
func NewPoller(cfg Config, pub Publisher, met *Metrics, log zerolog.Logger, opts ...Option) (*Poller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if met == nil {
		met = NewMetrics(nil)
	}
	p := &Poller{cfg: cfg, pub: pub, met: met, log: log.With().Str("feed", cfg.Feed).Logger(),
		client: &http.Client{}, now: time.Now, jitter: rand.Float64, track: newTracker(),
		issueLog: map[issueKey]issueLogged{}, refreshes: map[string]*episode{}}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// Run polls until ctx ends, then returns nil.
func (p *Poller) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		timer.Reset(p.Poll(ctx))
	}
}

// Outcomes of a poll (label values of dcgpd_gbfs_polls_total).
const (
	OutcomePublished = "published"
	OutcomeUnchanged = "unchanged"
	OutcomeFailed    = "failed"
	// OutcomePublishFailed: the feed was read but the daemon did not
	// store the status; the snapshot stays pending.
	OutcomePublishFailed = "publish_failed"
)

// Poll reads the feeds once, publishes what is new and returns the wait
// until the next poll.
func (p *Poller) Poll(ctx context.Context) time.Duration {
	ttl, err := p.poll(ctx)
	outcome := OutcomePublished
	var pe *PublishError
	switch {
	case errors.Is(err, errUnchanged):
		outcome = OutcomeUnchanged
	case errors.As(err, &pe):
		outcome = OutcomePublishFailed
	case err != nil:
		outcome = OutcomeFailed
	}
	p.met.polls.WithLabelValues(p.cfg.Feed, outcome).Inc()
	switch {
	case outcome == OutcomeFailed && ctx.Err() != nil:
		return p.cfg.MinInterval // stopping: not the feed's fault
	case outcome == OutcomeFailed:
		return p.failed(err)
	case outcome == OutcomePublishFailed && ctx.Err() == nil:
		p.publishFailed(pe)
	case outcome != OutcomePublishFailed:
		p.stored()
	}
	p.recovered() // the feed was read
	return min(max(ttl, p.cfg.MinInterval), p.cfg.MaxInterval)
}

// errUnchanged: the snapshot was processed before and fully stored.
var errUnchanged = errors.New("unchanged")

func (p *Poller) poll(ctx context.Context) (time.Duration, error) {
	if err := p.refresh(ctx); err != nil {
		return 0, err
	}
	body, err := p.fetch(ctx, FeedStationStatus, p.disc.Feeds[FeedStationStatus])
	if err != nil {
		var fe *FeedError
		if errors.As(err, &fe) && fe.Reason == ReasonHTTPStatus {
			p.discAt = time.Time{} // the URL may have moved: discover again
		}
		return 0, err
	}
	st, err := DecodeStationStatus(body)
	if err != nil {
		return 0, &FeedError{File: FeedStationStatus, Reason: ReasonMalformed, Err: err}
	}
	now := p.now()
	if age := now.Sub(st.LastUpdated); age > p.cfg.MaxFeedAge {
		return 0, &FeedError{File: FeedStationStatus, Reason: ReasonStaleFeed,
			Err: fmt.Errorf("last_updated %s is %v old (max %v)", st.LastUpdated.Format(time.RFC3339), age.Round(time.Second), p.cfg.MaxFeedAge)}
	}
	if !st.LastUpdated.Equal(p.lastStamp) || p.pending == nil {
		at, err := p.publishTime(st.LastUpdated, now)
		if err != nil {
			return 0, err
		}
		msgs, err := p.snapshot(&st, at)
		if err != nil {
			return 0, err
		}
		p.supersede()
		p.lastStamp, p.lastAt, p.pending, p.sent = st.LastUpdated, at, msgs, 0
	} else if p.sent == len(p.pending) {
		return st.TTL, errUnchanged
	}
	if err := p.publishPending(ctx); err != nil {
		return st.TTL, err
	}
	return st.TTL, nil
}

// refresh reads gbfs.json and station_information when missing or due;
// a failed re-read keeps the copy held, a failed first read fails the
// poll (without a discovery) or publishes without capacities (without
// station_information).
func (p *Poller) refresh(ctx context.Context) error {
	now := p.now()
	if p.disc == nil || now.Sub(p.discAt) >= p.refreshAfter(p.disc.TTL) {
		d, err := p.discover(ctx)
		switch {
		case err == nil:
			p.disc, p.discAt = &d, now
			p.refreshed("gbfs")
		case p.disc == nil:
			return err
		default:
			p.refreshFailed(err, "gbfs")
			p.discAt = now.Add(p.cfg.MinInterval - p.refreshAfter(p.disc.TTL)) // retry soon
		}
	}
	infoURL := p.disc.Feeds[FeedStationInformation]
	if infoURL == "" || (p.info != nil && now.Sub(p.infoAt) < p.refreshAfter(0)) {
		return nil
	}
	body, err := p.fetch(ctx, FeedStationInformation, infoURL)
	if err == nil {
		var si StationInformation
		if si, err = DecodeStationInformation(body, p.cfg.Language); err != nil {
			err = &FeedError{File: FeedStationInformation, Reason: ReasonMalformed, Err: err}
		} else {
			p.info, p.infoAt = make(map[string]StationInfo, len(si.Stations)), now
			for _, s := range si.Stations {
				p.info[s.ID] = s
			}
			p.stationIssues(problemIssues(si.Problems), FeedStationInformation)
			p.refreshed(FeedStationInformation)
			return nil
		}
	}
	if ctx.Err() == nil {
		p.refreshFailed(err, FeedStationInformation)
	}
	p.infoAt = now.Add(p.cfg.MinInterval - p.refreshAfter(0)) // retry soon, keep the old copy
	return nil
}

func (p *Poller) discover(ctx context.Context) (Discovery, error) {
	body, err := p.fetch(ctx, "gbfs", p.cfg.URL)
	if err != nil {
		return Discovery{}, err
	}
	d, err := DecodeDiscovery(body, p.cfg.Language)
	if err != nil {
		return Discovery{}, &FeedError{File: "gbfs", Reason: ReasonMalformed, Err: err}
	}
	return d, nil
}

// refreshAfter is how long a discovery or station_information copy is
// kept: RefreshInterval (shorter when the file's ttl is, never below
// MinInterval).
func (p *Poller) refreshAfter(ttl time.Duration) time.Duration {
	if ttl > 0 && ttl < p.cfg.RefreshInterval {
		return max(ttl, p.cfg.MinInterval)
	}
	return p.cfg.RefreshInterval
}

// publishPending stores the current snapshot's messages not yet stored.
func (p *Poller) publishPending(ctx context.Context) error {
	subject := p.cfg.Subject()
	for ; p.sent < len(p.pending); p.sent++ {
		id := stationstatus.MsgID(p.cfg.Feed, p.lastAt, p.sent)
		if err := p.pub.Publish(ctx, subject, id, p.pending[p.sent]); err != nil {
			return publishError(subject, err)
		}
	}
	p.met.updated.WithLabelValues(p.cfg.Feed).Set(float64(p.lastAt.Unix()))
	return nil
}
