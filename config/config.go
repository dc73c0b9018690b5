package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/dcgpd/dcgpd/cvi/spec"
)

// Duration is a time.Duration written as "5m" or "1h30m" in TOML.
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Config is the daemon's configuration (dcgpd.toml; every key is
// documented there with its default).
type Config struct {
	NATS     NATSConfig     `toml:"nats"`
	HTTP     HTTPConfig     `toml:"http"`
	Log      LogConfig      `toml:"log"`
	Snapshot SnapshotConfig `toml:"snapshot"`
	Cluster  ClusterConfig  `toml:"cluster"`
	Models   []ModelConfig  `toml:"models"`
	// Rebalance joins pairs of models (pickups, returns) with a station
	// status feed and publishes each station's risk (rebalance.go).
	Rebalance []RebalanceConfig `toml:"rebalance"`
	// Charging joins models of charging sites with their EVSE status
	// (charging.go).
	Charging []ChargingConfig `toml:"charging"`
	// Faults injects delays for crash tests (never set from the file).
	Faults Faults `toml:"-"`
	// dir resolves relative paths (the configuration file's folder).
	dir string
}

// SnapshotConfig places and schedules the per-model snapshots.
type SnapshotConfig struct {
	// Dir holds one snapshot per model and the previous one (default
	// "dcgpd-data/snapshots"; "off" disables snapshots: a restart then
	// starts each model from its prior at the consumer's position).
	Dir string `toml:"dir"`
	// Interval is the longest time between snapshots while input flows
	// (default 30s). A snapshot is also written after each re-smooth is
	// swapped in, when EveryMessages (or half of max_ack_pending, if
	// fewer) await acknowledgement, and at shutdown.
	Interval Duration `toml:"interval"`
	// EveryMessages is how many unacknowledged input messages a model
	// holds before it snapshots (default 4096). Input is acknowledged
	// only once a snapshot covers it, and the server's cost of tracking
	// a consumer's unacknowledged messages grows with their number.
	EveryMessages int `toml:"every_messages"`
	// Store is file (default: Dir on this machine) or jetstream (the
	// dcgp_snapshots bucket and dcgp_snapshot_data object store, at
	// nats.replicas; required by cluster mode).
	Store string `toml:"store"`
}

// Faults are delays a crash test injects so that a kill lands inside a
// snapshot write or a re-smooth (`DCGPD_FAULT_PAUSE`, read only by a
// binary built with -tags faultinject, as the end-to-end tests build it);
// zero in a release binary.
type Faults struct {
	SnapshotPause time.Duration
	ResmoothPause time.Duration
}

// NATSConfig selects the NATS server and the subjects.
type NATSConfig struct {
	// URL lists servers ("nats://a:4222,nats://b:4222"); empty starts an
	// embedded server.
	URL string `toml:"url"`
	// Listen is the embedded server's client address (default
	// 127.0.0.1:4222; port -1 picks a free one).
	Listen string `toml:"listen"`
	// StoreDir is the embedded server's JetStream store (default
	// "dcgpd-data/jetstream").
	StoreDir string `toml:"store_dir"`
	// Credentials for an external server: user/password, token, an nkey
	// seed file or a creds (JWT) file; TLS files for mutual TLS. With no
	// URL, the embedded server requires the token, user/password or nkey
	// given here (package stream/natsio).
	User      string `toml:"user"`
	Password  string `toml:"password"`
	Token     string `toml:"token"`
	NKeyFile  string `toml:"nkey_file"`
	CredsFile string `toml:"creds_file"`
	TLSCA     string `toml:"tls_ca"`
	TLSCert   string `toml:"tls_cert"`
	TLSKey    string `toml:"tls_key"`
	// Prefix of every subject (default "dcgp").
	Prefix string `toml:"prefix"`
	// MaxAckPending bounds unacknowledged input messages per model
	// (default 20000); AckWait is how long one may stay unacknowledged
	// before redelivery (default 10m: a bin may stay open that long).
	MaxAckPending int      `toml:"max_ack_pending"`
	AckWait       Duration `toml:"ack_wait"`
	// Replicas of the streams and buckets the daemon creates (default 1).
	Replicas int `toml:"replicas"`
	// OpenListen lets an embedded server listen off loopback without
	// authentication (default false: refused).
	OpenListen bool `toml:"open_listen"`
	// ServerTLS is the embedded server's own certificate (security.go).
	ServerTLS ServerTLSConfig `toml:"server_tls"`
	// InsecureNoTLS lets an embedded server listen off loopback with
	// credentials but without ServerTLS (default false: refused).
	InsecureNoTLS bool `toml:"insecure_no_tls"`
	// Users are the embedded server's other users, each with a role
	// (security.go).
	Users []NATSUser `toml:"users"`
}

// HTTPConfig is the health and metrics endpoint, the operator's page
// and its JSON API.
type HTTPConfig struct {
	// Listen address (default 127.0.0.1:9464; "off" disables it).
	Listen string `toml:"listen"`
	// Username and PasswordHash (bcrypt) require HTTP basic
	// authentication; TokenFile holds a bearer token. Off loopback one of
	// them is required (security.go).
	Username     string `toml:"username"`
	PasswordHash string `toml:"password_hash"`
	TokenFile    string `toml:"token_file"`
	// TLSCert and TLSKey serve HTTPS.
	TLSCert string `toml:"tls_cert"`
	TLSKey  string `toml:"tls_key"`
	// InsecureNoTLS lets credentials cross a listener off loopback
	// without TLS (default false: refused).
	InsecureNoTLS bool `toml:"insecure_no_tls"`
}

// LogConfig selects logging.
type LogConfig struct {
	// Level is debug | info | warn | error (default info).
	Level string `toml:"level"`
	// Format is json | console | auto (default auto: console on a
	// terminal, JSON otherwise).
	Format string `toml:"format"`
}

// ProductConfig is one product given inline.
type ProductConfig struct {
	Name     string    `toml:"name"`
	Features []float64 `toml:"features"`
}

// ResmoothConfig schedules the background re-smooth and re-learn.
type ResmoothConfig struct {
	// EveryBins re-smooths after this many closed bins (default 24; 0
	// with Interval 0 disables re-smoothing).
	EveryBins int `toml:"every_bins"`
	// Interval re-smooths at least this often by wall time (default 0:
	// off).
	Interval Duration `toml:"interval"`
	// Window is the number of most recent bins re-smoothed (default 168).
	Window int `toml:"window"`
	// Relearn re-learns the hyperparameters on the window by ELBO
	// (default false).
	Relearn bool `toml:"relearn"`
	// ApplyAfter is how many bins after its start a re-smooth's sites,
	// filter head and hyperparameters are swapped in (default 0: every_bins).
	// A fixed bin, not "when it finishes", makes every output a function
	// of the input alone, so a restart re-publishes true duplicates; if the
	// re-smooth has not finished by then, that model's ingest waits for it.
	ApplyAfter int `toml:"apply_after"`
	// Tolerance is the re-smooth's CVI convergence test, a relative ELBO
	// change (default 0: DefaultResmoothTolerance, 1e-9); 1e-6 takes less
	// than half the CPU, for a faster catch-up on a backlog.
	Tolerance float64 `toml:"tolerance"`
	// MaxWait bounds that wait (default 5m; 0 means 5m): a re-smooth still running
	// then is abandoned and the online path goes on with the state it has
	// (counted as outcome "abandoned"; outputs after it then depend on
	// timing, so a replay may differ).
	MaxWait Duration `toml:"max_wait"`
}

// OnlineConfig tunes the per-bin refinement.
type OnlineConfig struct {
	// Steps bounds the local CVI steps per bin (default 20).
	Steps int `toml:"steps"`
	// Damping is the first step size β in (0, 1] (default 1).
	Damping float64 `toml:"damping"`
}

// ModelConfig is one model: a product graph fed by one subject.
type ModelConfig struct {
	// Name is the model's subject token: letters, digits, '-' and '_'.
	Name string `toml:"name"`
	// Products is a products CSV (product,<features>); or list Product.
	Products string          `toml:"products"`
	Product  []ProductConfig `toml:"product"`
	// Geographic marks inline features as (lat, lon) in degrees.
	Geographic bool `toml:"geographic"`
	// Bin is the bin width (required, e.g. "1h"); Origin aligns the bins
	// (default the Unix epoch).
	Bin    Duration  `toml:"bin"`
	Origin time.Time `toml:"origin"`
	// Lateness is how long after a bin's end (by the message clock) data
	// for it is still taken (default 0).
	Lateness Duration `toml:"lateness"`
	// Late is drop (default: count and reject data for closed bins) or
	// resmooth (keep it for the next re-smooth of its window).
	Late string `toml:"late"`
	// Horizon is the number of bins forecast with each filtered estimate
	// (default 6).
	Horizon int `toml:"horizon"`
	// MaxAhead rejects data for bins more than this many bins after the
	// newest open bin (default 1000): a clock error, not data.
	MaxAhead int            `toml:"max_ahead"`
	Online   OnlineConfig   `toml:"online"`
	Resmooth ResmoothConfig `toml:"resmooth"`
	// Model and Fit are the same tables `dcgpd fit` reads.
	Model spec.Model `toml:"model"`
	Fit   spec.Fit   `toml:"fit"`
	// ModelFile is a model configuration file (as `dcgpd fit
	// --save-model` writes) whose [model] and [fit] tables replace Model
	// and Fit; exactly one of the file and the inline tables. LoadConfig
	// reads it, relative to the configuration file.
	ModelFile string `toml:"model_file"`
	// fromFile is set once ModelFile's tables are in Model and Fit.
	fromFile bool
	// fromFeed: a [[rebalance]] entry's gbfs_url gives the products when
	// the entry lists none (config/feed.go).
	fromFeed bool
}

// DefaultConfig returns the defaults of every key (no models).
func DefaultConfig() Config {
	return Config{
		NATS: NATSConfig{Listen: "127.0.0.1:4222", StoreDir: "dcgpd-data/jetstream", Prefix: "dcgp",
			MaxAckPending: 20000, AckWait: Duration{10 * time.Minute}, Replicas: 1},
		HTTP:     HTTPConfig{Listen: "127.0.0.1:9464"},
		Log:      LogConfig{Level: "info", Format: "auto"},
		Cluster:  ClusterConfig{Lease: Duration{10 * time.Second}},
		Snapshot: SnapshotConfig{Dir: "dcgpd-data/snapshots", Interval: Duration{30 * time.Second}, EveryMessages: 4096, Store: "file"},
	}
}

// DefaultModelConfig returns a model's defaults; Name and Bin must still
// be set.
func DefaultModelConfig() ModelConfig {
	return ModelConfig{Origin: time.Unix(0, 0).UTC(), Late: "drop", Horizon: 6, MaxAhead: 1000,
		Online:   OnlineConfig{Steps: 20, Damping: 1},
		Resmooth: ResmoothConfig{EveryBins: 24, Window: 168, MaxWait: Duration{5 * time.Minute}}}
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Validate checks every value; errors name the key.
func (c *Config) Validate() error {
	n := &c.NATS
	if !nameRe.MatchString(strings.ReplaceAll(n.Prefix, ".", "_")) {
		return fmt.Errorf("nats.prefix: %q is not a subject prefix", n.Prefix)
	}
	if n.MaxAckPending < 1 {
		return fmt.Errorf("nats.max_ack_pending: must be >= 1, got %d", n.MaxAckPending)
	}
	if n.AckWait.Duration < time.Second {
		return fmt.Errorf("nats.ack_wait: must be at least 1s, got %v", n.AckWait)
	}
	if n.Replicas < 1 || n.Replicas > 5 {
		return fmt.Errorf("nats.replicas: must be 1 to 5, got %d", n.Replicas)
	}
	if n.URL == "" && n.Listen == "" {
		return errors.New("nats.listen: the embedded server needs an address")
	}
	if (n.TLSCert == "") != (n.TLSKey == "") {
		return errors.New("nats.tls_cert and nats.tls_key go together")
	}
	if c.Snapshot.Dir == "" {
		return errors.New(`snapshot.dir: empty; give a directory or "off"`)
	}
	if c.Snapshot.Interval.Duration < 100*time.Millisecond {
		return fmt.Errorf("snapshot.interval: must be at least 100ms, got %v", c.Snapshot.Interval)
	}
	if c.Snapshot.Store != "file" && c.Snapshot.Store != "jetstream" {
		return fmt.Errorf("snapshot.store: %q is not file or jetstream", c.Snapshot.Store)
	}
	if err := c.validateCluster(); err != nil {
		return err
	}
	if c.Snapshot.EveryMessages < 1 {
		return fmt.Errorf("snapshot.every_messages: must be >= 1, got %d", c.Snapshot.EveryMessages)
	}
	set := 0
	for _, v := range []string{n.CredsFile, n.NKeyFile, n.Token, n.User} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return errors.New("nats: give at most one of creds_file, nkey_file, token and user")
	}
	if n.Password != "" && n.User == "" {
		return errors.New("nats.password: needs nats.user")
	}
	if n.URL == "" {
		if err := CheckEmbeddedListen(n); err != nil {
			return err
		}
	}
	if err := n.validateEmbeddedSecurity(); err != nil {
		return err
	}
	if c.HTTP.Listen == "" {
		// net.Listen would take every interface and a random port.
		return errors.New(`http.listen: empty; give host:port (default 127.0.0.1:9464) or "off"`)
	}
	if err := c.HTTP.validate(); err != nil {
		return err
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: %q is not debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "json", "console", "auto":
	default:
		return fmt.Errorf("log.format: %q is not json, console or auto", c.Log.Format)
	}
	if len(c.Models) == 0 {
		return errors.New("models: at least one [[models]] entry is needed")
	}
	c.markFeedModels()
	seen := map[string]bool{}
	for i := range c.Models {
		m := &c.Models[i]
		if err := m.Validate(); err != nil {
			return fmt.Errorf("models[%d] (%s).%w", i, m.Name, err)
		}
		if seen[m.Name] {
			return fmt.Errorf("models[%d].name: %q appears twice", i, m.Name)
		}
		seen[m.Name] = true
	}
	if err := c.validateRebalance(); err != nil {
		return err
	}
	return c.validateCharging()
}

// MaxCoupledProducts is the largest model the daemon runs whose products
// are coupled through its kernel (a product kernel other than
// independent) or its sites (model.diffusion.sites = "full"): such a
// model's online step works on one joint chain of N_p × (temporal state)
// numbers, whose cost grows as N_p³ or faster. Measured with the
// Matérn-3/2 + periodic 24 h kernel, a separable Matérn product kernel
// and diagonal diffusion sites on the shared 2-core machine: 50 products
// 0.05 s a bin, 100 products 0.86 s, 200 products 12.6 s. A city takes the
// independent product kernel with diagonal sites, whose cost is linear in
// N_p.
const MaxCoupledProducts = 100

// CheckCoupledSize refuses a model of np products coupled through its
// kernel or its sites beyond MaxCoupledProducts.
func CheckCoupledSize(np int, coupledKernel, fullSites bool) error {
	if np <= MaxCoupledProducts || (!coupledKernel && !fullSites) {
		return nil
	}
	what := "model.product"
	if !coupledKernel {
		what = "model.diffusion.sites"
	}
	return fmt.Errorf("%s: couples the %d products; the daemon runs coupled models of at most %d products (the per-bin cost grows as N_p³): use the independent product kernel with diagonal diffusion sites for a city, or split the products", what, np, MaxCoupledProducts)
}

// Validate checks a model's values; errors start with the key.
func (m *ModelConfig) Validate() error {
	bad := func(key, format string, a ...any) error {
		return fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...))
	}
	switch {
	case !nameRe.MatchString(m.Name):
		return bad("name", "%q must be letters, digits, '-' or '_'", m.Name)
	case m.Bin.Duration <= 0:
		return bad("bin", "a bin width such as \"1h\" is required, got %v", m.Bin)
	case m.Bin.Duration%time.Second != 0:
		return bad("bin", "%v is not a whole number of seconds", m.Bin)
	case m.Origin.Year() < 1900 || m.Origin.Year() > 2200:
		return bad("origin", "%s is outside 1900–2200", m.Origin.Format(time.RFC3339))
	case m.Lateness.Duration < 0:
		return bad("lateness", "must be >= 0, got %v", m.Lateness)
	case m.Late != "drop" && m.Late != "resmooth":
		return bad("late", "%q is not drop or resmooth", m.Late)
	case m.Horizon < 0 || m.Horizon > 10000:
		return bad("horizon", "must be 0 to 10000, got %d", m.Horizon)
	case m.MaxAhead < 1:
		return bad("max_ahead", "must be >= 1, got %d", m.MaxAhead)
	case m.Online.Steps < 1 || m.Online.Steps > 1000:
		return bad("online.steps", "must be 1 to 1000, got %d", m.Online.Steps)
	case !(m.Online.Damping > 0 && m.Online.Damping <= 1):
		return bad("online.damping", "must be in (0, 1], got %v", m.Online.Damping)
	case m.Resmooth.EveryBins < 0:
		return bad("resmooth.every_bins", "must be >= 0, got %d", m.Resmooth.EveryBins)
	case m.Resmooth.Interval.Duration < 0:
		return bad("resmooth.interval", "must be >= 0, got %v", m.Resmooth.Interval)
	case m.Resmooth.MaxWait.Duration < 0:
		return bad("resmooth.max_wait", "must be >= 0 (0: 5m), got %v", m.Resmooth.MaxWait)
	case !(m.Resmooth.Tolerance >= 0 && m.Resmooth.Tolerance < 1):
		return bad("resmooth.tolerance", "must be in [0, 1) (0: 1e-9), got %v", m.Resmooth.Tolerance)
	case m.Resmooth.ApplyAfter < 0:
		return bad("resmooth.apply_after", "must be >= 0, got %d", m.Resmooth.ApplyAfter)
	case m.Resmooth.Window < 2 || m.Resmooth.Window > 1_000_000:
		return bad("resmooth.window", "must be 2 to 1000000 bins, got %d", m.Resmooth.Window)
	case m.Products == "" && len(m.Product) == 0 && !m.fromFeed:
		return bad("products", "name a products CSV or list [[models.product]] (or take a GBFS feed's stations: a [[rebalance]] entry's gbfs_url)")
	case m.Products != "" && len(m.Product) > 0:
		return bad("products", "give a products file or [[models.product]], not both")
	}
	names := map[string]bool{}
	for i, p := range m.Product {
		if p.Name == "" || names[p.Name] {
			return bad(fmt.Sprintf("product[%d].name", i), "%q is empty or repeated", p.Name)
		}
		// loadProducts writes the list as a products CSV, unquoted.
		if strings.TrimSpace(p.Name) != p.Name || strings.ContainsAny(p.Name, ",\"") || strings.IndexFunc(p.Name, unicode.IsControl) >= 0 {
			return bad(fmt.Sprintf("product[%d].name", i), "%q: no commas, quotes, control characters or surrounding spaces", p.Name)
		}
		names[p.Name] = true
		for _, v := range p.Features {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad(fmt.Sprintf("product[%d].features", i), "%v is not finite", v)
			}
		}
		if len(p.Features) != len(m.Product[0].Features) {
			return bad(fmt.Sprintf("product[%d].features", i), "%d features, product[0] has %d", len(p.Features), len(m.Product[0].Features))
		}
	}
	s := spec.Spec{Model: m.Model, Fit: m.Fit}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// LoadConfig reads, fills with defaults and validates a daemon
// configuration; errors name the file and, where it can be found, the
// line of the offending key.
func LoadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	// One byte more than the limit is enough for DecodeConfig to refuse it.
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := DecodeConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s:%w", path, err)
	}
	c.dir = filepath.Dir(path)
	if err := c.loadModelFiles(b); err != nil {
		return Config{}, fmt.Errorf("%s:%w", path, err)
	}
	if err := c.checkProductsFiles(b); err != nil {
		return Config{}, fmt.Errorf("%s:%w", path, err)
	}
	// Credential and TLS files are relative to the file, as documented.
	for _, p := range []*string{&c.NATS.NKeyFile, &c.NATS.CredsFile, &c.NATS.TLSCA, &c.NATS.TLSCert, &c.NATS.TLSKey,
		&c.NATS.ServerTLS.CertFile, &c.NATS.ServerTLS.KeyFile, &c.NATS.ServerTLS.CAFile,
		&c.HTTP.TokenFile, &c.HTTP.TLSCert, &c.HTTP.TLSKey} {
		*p = c.Path(*p)
	}
	return c, nil
}

// MaxConfigBytes bounds a configuration file (a dcgpd.toml listing
// thousands of products inline is well under it).
const MaxConfigBytes = 16 << 20

// secretKeyRe matches a line that sets nats.password or nats.token.
var secretKeyRe = regexp.MustCompile(`(^|[\s{,.])(password|token)\s*=`)

// DecodeConfig parses a configuration held in memory. Errors start with
// the line number ("12: models[0] (x).bin: …"), or "0" when the key's line
// cannot be found.
func DecodeConfig(b []byte) (Config, error) {
	if len(b) > MaxConfigBytes {
		return Config{}, fmt.Errorf("0: the configuration is larger than %d MiB (stream.MaxConfigBytes)", MaxConfigBytes>>20)
	}
	c := DefaultConfig()
	md, err := toml.Decode(string(b), &c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if secretKeyRe.MatchString(lineOf(b, pe.Position.Line)) {
				// The parser quotes what it found, a piece of the secret.
				msg = "malformed value of a password or token (not shown)"
			}
			return Config{}, fmt.Errorf("%d: %s", pe.Position.Line, msg)
		}
		return Config{}, fmt.Errorf("0: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return Config{}, fmt.Errorf("%d: unknown key %q", spec.KeyLine(b, k.String()), k.String())
	}
	// Model defaults apply to the keys each [[models]] entry leaves out.
	for i := range c.Models {
		d := DefaultModelConfig()
		m := &c.Models[i]
		fill(m, d, func(key string) bool { return definedIn(md, i, key) })
		if m.ModelFile == "" {
			continue
		}
		for _, table := range []string{"model", "fit"} {
			if definedUnder(md, i, table) {
				return Config{}, fmt.Errorf("%d: models[%d] (%s).model_file: give a model file or [models.%s], not both (edit the file's [%s] table)",
					entryKeyLine(b, i, "model_file"), i, m.Name, table, table)
			}
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%d: %w", errLine(b, err), err)
	}
	return c, nil
}

// lineOf returns line n (from 1) of b, or "".
func lineOf(b []byte, n int) string {
	for i, l := range strings.Split(string(b), "\n") {
		if i+1 == n {
			return l
		}
	}
	return ""
}

// definedIn reports whether key ("horizon", "online.steps") is set in the
// i-th [[models]] entry. MetaData.IsDefined does not index arrays of
// tables, so the keys of every entry are scanned.
func definedIn(md toml.MetaData, i int, key string) bool {
	idx := -1
	want := "models." + key
	for _, k := range md.Keys() {
		s := k.String()
		if s == "models" {
			idx++
			continue
		}
		if idx == i && s == want {
			return true
		}
	}
	return false
}

// definedUnder reports whether the i-th [[models]] entry defines the
// table ("model") or any key in it.
func definedUnder(md toml.MetaData, i int, table string) bool {
	idx := -1
	want := "models." + table
	for _, k := range md.Keys() {
		s := k.String()
		if s == "models" {
			idx++
			continue
		}
		if idx == i && (s == want || strings.HasPrefix(s, want+".")) {
			return true
		}
	}
	return false
}

// loadModelFiles reads each entry's model_file (relative to the
// configuration) into its Model and Fit. Errors start with the line of the
// model_file key in b and name the model file and its own line.
// checkProductsFiles refuses, with its line, a products file that cannot
// be read, before the daemon starts anything (the runner reads it).
func (c *Config) checkProductsFiles(b []byte) error {
	for i := range c.Models {
		m := &c.Models[i]
		if m.Products == "" {
			continue
		}
		f, err := os.Open(c.Path(m.Products))
		if err == nil {
			var st os.FileInfo
			if st, err = f.Stat(); err == nil && st.IsDir() {
				err = fmt.Errorf("%s is a directory", c.Path(m.Products))
			}
			f.Close()
		}
		if err != nil {
			return fmt.Errorf("%d: models[%d] (%s).products: %w", entryKeyLine(b, i, "products"), i, m.Name, err)
		}
	}
	return nil
}

func (c *Config) loadModelFiles(b []byte) error {
	for i := range c.Models {
		m := &c.Models[i]
		if m.ModelFile == "" {
			continue
		}
		sp, err := spec.Load(c.Path(m.ModelFile))
		if err == nil {
			m.Model, m.Fit, m.fromFile = sp.Model, sp.Fit, true
			err = m.Validate()
		}
		if err != nil {
			return fmt.Errorf("%d: models[%d] (%s).model_file: %w", entryKeyLine(b, i, "model_file"), i, m.Name, err)
		}
	}
	return nil
}

// ModelLoaded returns an error if the model names a model file that was
// not read (a configuration decoded by DecodeConfig, not LoadConfig).
func (m *ModelConfig) ModelLoaded() error {
	if m.ModelFile != "" && !m.fromFile {
		return fmt.Errorf("models (%s).model_file %q: not read (LoadConfig reads it, relative to the configuration)", m.Name, m.ModelFile)
	}
	return nil
}

// fill copies the defaults d into the keys of m that the file left out.
func fill(m *ModelConfig, d ModelConfig, defined func(string) bool) {
	if !defined("origin") {
		m.Origin = d.Origin
	}
	if !defined("late") {
		m.Late = d.Late
	}
	if !defined("horizon") {
		m.Horizon = d.Horizon
	}
	if !defined("max_ahead") {
		m.MaxAhead = d.MaxAhead
	}
	if !defined("online.steps") {
		m.Online.Steps = d.Online.Steps
	}
	if !defined("online.damping") {
		m.Online.Damping = d.Online.Damping
	}
	if !defined("resmooth.every_bins") {
		m.Resmooth.EveryBins = d.Resmooth.EveryBins
	}
	if !defined("resmooth.window") {
		m.Resmooth.Window = d.Resmooth.Window
	}
	if !defined("resmooth.max_wait") {
		m.Resmooth.MaxWait = d.Resmooth.MaxWait
	}
}

var specKeyRe = regexp.MustCompile(`^[a-z_.\[\]0-9]+`)

var errKeyRe = regexp.MustCompile(`^models\[(\d+)\] \([^)]*\)\.([a-z_.\[\]0-9]+):`)

// errLine finds the line of the key a validation error names.
func errLine(b []byte, err error) int {
	msg := err.Error()
	if m := errKeyRe.FindStringSubmatch(msg); m != nil {
		var i int
		fmt.Sscan(m[1], &i)
		key := m[2]
		if j := strings.IndexByte(key, '['); j >= 0 {
			key = key[:j]
		}
		if key == "model" {
			// "model: model.likelihood …" or "model.temporal[0]: …":
			// the spec's own key follows.
			rest := strings.TrimSpace(msg[len(m[0]):])
			if k := specKeyRe.FindString(rest); k != "" {
				k = strings.TrimPrefix(k, "model.")
				parts := strings.Split(k, ".")
				key = parts[len(parts)-1]
				if j := strings.IndexByte(key, '['); j >= 0 {
					key = key[:j]
				}
			}
		}
		return entryKeyLine(b, i, key)
	}
	if j := strings.IndexByte(msg, ':'); j > 0 {
		return spec.KeyLine(b, msg[:j])
	}
	return 0
}

// entryKeyLine returns the line of the last component of key within the
// i-th [[models]] entry (or that entry's header line).
func entryKeyLine(b []byte, i int, key string) int {
	re := spec.KeyPattern(key)
	header := regexp.MustCompile(`^\s*\[\[\s*models\s*\]\]`)
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	entry, start := -1, 0
	for line := 1; sc.Scan(); line++ {
		if header.MatchString(sc.Text()) {
			entry++
			if entry == i {
				start = line
			}
			if entry > i {
				break
			}
			continue
		}
		if entry == i && re.MatchString(sc.Text()) {
			return line
		}
	}
	return start
}

// Path resolves a path from the configuration relative to its file.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.dir == "" {
		return p
	}
	return filepath.Join(c.dir, p)
}
