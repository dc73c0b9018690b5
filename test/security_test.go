package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/daemon"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// The daemon against a nats-server that requires authentication: for
// every method the daemon supports (user/password, token, nkey, creds
// file, TLS with a private CA, mutual TLS), a daemon with the right
// credentials connects, consumes a bin and publishes its estimate; one
// with wrong credentials stops at once with an error that names the
// problem. Neither the error nor anything the daemon logs (at debug
// level) may contain a secret.

// secModel is the model every security test runs: two products, one bin
// of an hour, no re-smoothing.
const secModel = "sec"

func secConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.DefaultConfig()
	cfg.HTTP.Listen = "off"
	cfg.Snapshot.Dir = filepath.Join(t.TempDir(), "snapshots")
	cfg.Log.Level = "debug"
	m := config.DefaultModelConfig()
	m.Name = secModel
	m.Bin = config.Duration{Duration: time.Hour}
	m.Origin = origin
	m.Horizon = 1
	m.Resmooth.EveryBins = 0
	m.Product = []config.ProductConfig{{Name: "a", Features: []float64{0, 0}}, {Name: "b", Features: []float64{100, 0}}}
	sp := modelSpec()
	m.Model, m.Fit = sp.Model, sp.Fit
	cfg.Models = []config.ModelConfig{m}
	return cfg
}

// secret returns a random string that appears nowhere unless leaked.
func secret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// logBuffer is a zerolog sink safe for the daemon's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// authServer starts an in-process nats-server with JetStream on a free
// loopback port with the authentication opts describes.
func authServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port = "127.0.0.1", -1
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.NoSigs, opts.NoLog = true, true
	opts.MaxPayload = 2 * wire.MaxMessageBytes
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatal("nats-server not ready in 10s")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// hostPort is the server's client address, without a scheme.
func hostPort(s *server.Server) string {
	return s.Addr().String()
}

// noSecrets fails if any secret appears in text.
func noSecrets(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s contains the secret %q:\n%s", what, s, text)
		}
	}
}

// runAuthorized runs a daemon with cfg against its server, publishes one
// bin on <prefix>.obs.sec through a client with the same credentials and
// waits for the filtered estimate on <prefix>.latent.sec; then checks the
// logs for secrets.
// authRuns numbers runAuthorized's bins.
var authRuns atomic.Int64

func runAuthorized(t *testing.T, cfg config.Config, secrets []string) {
	t.Helper()
	d, logs, stop := launchSec(t, cfg)
	noSecrets(t, "NATSURL()", d.NATSURL(), secrets)

	// The test's own client connects exactly as the daemon does.
	nc, err := natsio.Connect(&cfg.NATS, nil, "security-test", zerolog.Nop())
	if err != nil {
		t.Fatalf("test client: %v", err)
	}
	defer nc.Close()
	col := collect(t, nc, cfg.NATS.Prefix+".latent."+secModel)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	three, five := 3.0, 5.0
	// A bin of its own: subtests share a server, and a daemon without a
	// snapshot reads the input stream from its start, earlier subtests'
	// bins included.
	start := origin.Add(time.Duration(authRuns.Add(1)) * time.Hour)
	msg, err := json.Marshal(wire.ObsMessage{Schema: wire.SchemaVersion, Model: secModel, BinStart: &start,
		Observations: []wire.Observation{{Product: "a", Demand: &three}, {Product: "b", Demand: &five, Supply: &five}}})
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer pcancel()
	if _, err := js.Publish(pctx, cfg.NATS.Prefix+".obs."+secModel, msg); err != nil {
		t.Fatalf("publishing the bin: %v", err)
	}
	var m wire.LatentMessage
	col.wait(t, "the filtered estimate", 10*time.Second, func(ms []wire.LatentMessage) bool {
		for _, x := range ms {
			if x.Kind == wire.KindFiltered && x.BinStart.Equal(start) {
				m = x
				return true
			}
		}
		return false
	})
	if m.Kind != wire.KindFiltered || !m.BinStart.Equal(start) || m.Missing != "" || len(m.Estimates) != 2 {
		t.Fatalf("estimate: %+v", m)
	}
	for _, e := range m.Estimates {
		if !e.Observed || math.IsNaN(e.Mean) || math.IsInf(e.Mean, 0) || !(e.Var > 0) {
			t.Errorf("estimate of %s: %+v", e.Product, e)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "dcgpd serving") {
		t.Fatalf("the log capture saw nothing:\n%s", out)
	}
	noSecrets(t, "the daemon's logs", out, secrets)
}

// runRefused runs a daemon that must fail to connect: Run returns an
// error containing every want (case-insensitive) and no secret, quickly,
// and the logs hold no secret either.
func runRefused(t *testing.T, cfg config.Config, want []string, secrets []string) {
	t.Helper()
	logs := &logBuffer{}
	d, err := daemon.New(cfg, zerolog.New(logs).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	err = d.Run(ctx)
	if err == nil {
		t.Fatal("Run returned nil; want a connection error")
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Run took %v to give up", took)
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
	noSecrets(t, "the error", msg, secrets)
	noSecrets(t, "the daemon's logs", logs.String(), secrets)
	t.Logf("refused as expected: %v", err)
}

func TestSecurityUserPassword(t *testing.T) {
	pass := secret(t, "pw-")
	wrong := secret(t, "wrongpw-")
	s := authServer(t, &server.Options{Users: []*server.User{{Username: "dcgpd", Password: pass}}})
	addr := hostPort(s)
	secrets := []string{pass, wrong}
	for _, tc := range []struct {
		name      string
		url       string
		user, pwd string
		ok        bool
	}{
		{"options", "nats://" + addr, "dcgpd", pass, true},
		{"in the URL", "nats://dcgpd:" + pass + "@" + addr, "", "", true},
		{"wrong password", "nats://" + addr, "dcgpd", wrong, false},
		{"wrong password in the URL", "nats://dcgpd:" + wrong + "@" + addr, "", "", false},
		{"no credentials", "nats://" + addr, "", "", false},
		{"malformed URL with a password", "nats://dcgpd:" + pass + "@" + addr + "x", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := secConfig(t)
			cfg.NATS.URL, cfg.NATS.User, cfg.NATS.Password = tc.url, tc.user, tc.pwd
			switch {
			case tc.ok:
				runAuthorized(t, cfg, secrets)
			case strings.HasSuffix(tc.url, "x"):
				runRefused(t, cfg, []string{"nats.url: server 1 of the list is not a valid URL"}, secrets)
			default:
				runRefused(t, cfg, []string{"connecting to NATS at nats://", addr, "authorization violation"}, secrets)
			}
		})
	}
}

func TestSecurityToken(t *testing.T) {
	token := secret(t, "tok-")
	wrong := secret(t, "wrongtok-")
	s := authServer(t, &server.Options{Authorization: token})
	addr := hostPort(s)
	secrets := []string{token, wrong}
	for _, tc := range []struct {
		name, url, token string
		ok               bool
	}{
		{"option", "nats://" + addr, token, true},
		{"in the URL", "nats://" + token + "@" + addr, "", true},
		{"wrong token", "nats://" + addr, wrong, false},
		{"wrong token in the URL", "nats://" + wrong + "@" + addr, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := secConfig(t)
			cfg.NATS.URL, cfg.NATS.Token = tc.url, tc.token
			if tc.ok {
				runAuthorized(t, cfg, secrets)
			} else {
				runRefused(t, cfg, []string{"connecting to NATS at nats://", addr, "authorization violation"}, secrets)
			}
		})
	}
}

// writeFile writes a secret file readable by its owner only.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func userSeed(t *testing.T) (seed []byte, pub string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	if seed, err = kp.Seed(); err != nil {
		t.Fatal(err)
	}
	if pub, err = kp.PublicKey(); err != nil {
		t.Fatal(err)
	}
	return seed, pub
}

func TestSecurityNKey(t *testing.T) {
	seed, pub := userSeed(t)
	other, _ := userSeed(t)
	s := authServer(t, &server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	addr := hostPort(s)
	dir := t.TempDir()
	good := writeFile(t, dir, "user.nk", seed)
	bad := writeFile(t, dir, "other.nk", other)
	// A corrupted seed: one base32 character changed, so the checksum
	// fails.
	corrupt := append([]byte(nil), seed...)
	if corrupt[10] == 'A' {
		corrupt[10] = 'B'
	} else {
		corrupt[10] = 'A'
	}
	broken := writeFile(t, dir, "broken.nk", corrupt)
	secrets := []string{string(seed), string(other), string(corrupt)}
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"seed file", good, nil},
		{"unknown nkey", bad, []string{"connecting to NATS at nats://", addr, "authorization violation"}},
		{"corrupt seed file", broken, []string{"nats.nkey_file", "broken.nk", "invalid checksum"}},
		{"missing seed file", filepath.Join(dir, "absent.nk"), []string{"nats.nkey_file", "absent.nk"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := secConfig(t)
			cfg.NATS.URL, cfg.NATS.NKeyFile = "nats://"+addr, tc.file
			if tc.want == nil {
				runAuthorized(t, cfg, secrets)
			} else {
				runRefused(t, cfg, tc.want, secrets)
			}
		})
	}
}

// operator is a throwaway JWT trust chain: an operator, its system
// account and one JetStream-enabled account whose users the tests sign.
type operator struct {
	claims  *jwt.OperatorClaims
	sysPub  string
	account nkeys.KeyPair
	// resolver holds the account JWTs the server trusts.
	resolver *server.MemAccResolver
}

func newOperator(t *testing.T) *operator {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	okp, err := nkeys.CreateOperator()
	must(err)
	opub, err := okp.PublicKey()
	must(err)
	sys, err := nkeys.CreateAccount()
	must(err)
	sysPub, err := sys.PublicKey()
	must(err)
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = "test-operator"
	oc.SystemAccount = sysPub
	ojwt, err := oc.Encode(okp)
	must(err)
	// The server trusts the decoded (signed) operator claims.
	if oc, err = jwt.DecodeOperatorClaims(ojwt); err != nil {
		t.Fatal(err)
	}
	res := &server.MemAccResolver{}
	sc := jwt.NewAccountClaims(sysPub)
	sc.Name = "SYS"
	sjwt, err := sc.Encode(okp)
	must(err)
	must(res.Store(sysPub, sjwt))
	acc, err := nkeys.CreateAccount()
	must(err)
	apub, err := acc.PublicKey()
	must(err)
	ac := jwt.NewAccountClaims(apub)
	ac.Name = "DCGP"
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{DiskStorage: jwt.NoLimit, MemoryStorage: jwt.NoLimit,
		Streams: jwt.NoLimit, Consumer: jwt.NoLimit}
	ajwt, err := ac.Encode(okp)
	must(err)
	must(res.Store(apub, ajwt))
	return &operator{claims: oc, sysPub: sysPub, account: acc, resolver: res}
}

// creds returns a creds file's content for a new user signed by signer
// (the trusted account, or any other account key) and the user's seed.
func creds(t *testing.T, signer nkeys.KeyPair) (file []byte, seed []byte) {
	t.Helper()
	seed, pub := userSeed(t)
	uc := jwt.NewUserClaims(pub)
	uc.Name = "dcgpd"
	ujwt, err := uc.Encode(signer)
	if err != nil {
		t.Fatal(err)
	}
	file, err = jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		t.Fatal(err)
	}
	return file, seed
}

func TestSecurityCredsFile(t *testing.T) {
	op := newOperator(t)
	s := authServer(t, &server.Options{TrustedOperators: []*jwt.OperatorClaims{op.claims},
		AccountResolver: op.resolver, SystemAccount: op.sysPub})
	addr := hostPort(s)
	stranger, err := nkeys.CreateAccount() // an account the operator never signed
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goodFile, goodSeed := creds(t, op.account)
	badFile, badSeed := creds(t, stranger)
	good := writeFile(t, dir, "dcgpd.creds", goodFile)
	bad := writeFile(t, dir, "stranger.creds", badFile)
	broken := writeFile(t, dir, "broken.creds", []byte("not a creds file\n"))
	secrets := []string{string(goodSeed), string(badSeed)}
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"creds file", good, nil},
		{"untrusted account", bad, []string{"connecting to NATS at nats://", addr, "authorization violation"}},
		{"malformed creds file", broken, []string{"connecting to NATS", "broken.creds", "no nkey seed found"}},
		{"missing creds file", filepath.Join(dir, "absent.creds"), []string{"connecting to NATS", "absent.creds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := secConfig(t)
			cfg.NATS.URL, cfg.NATS.CredsFile = "nats://"+addr, tc.file
			if tc.want == nil {
				runAuthorized(t, cfg, secrets)
			} else {
				runRefused(t, cfg, tc.want, secrets)
			}
		})
	}
}

// tlsServer starts a server with a certificate from ca; verify requires
// client certificates signed by ca.
func tlsServer(t *testing.T, ca *natstest.PKI, verify bool) *server.Server {
	t.Helper()
	cert, key, _ := ca.Issue(t, "server"+strconv.FormatBool(verify), x509.ExtKeyUsageServerAuth)
	tc := &server.TLSConfigOpts{CertFile: cert, KeyFile: key, Verify: verify}
	if verify {
		tc.CaFile = ca.CAFile
	}
	conf, err := server.GenTLSConfig(tc)
	if err != nil {
		t.Fatal(err)
	}
	return authServer(t, &server.Options{TLS: true, TLSVerify: verify, TLSConfig: conf, TLSTimeout: 5})
}

func TestSecurityTLS(t *testing.T) {
	dir := t.TempDir()
	ca := natstest.NewPKI(t, dir, "dcgp")
	rogue := natstest.NewPKI(t, dir, "rogue")
	s := tlsServer(t, ca, false)
	addr := hostPort(s)
	for _, tc := range []struct {
		name, url, caFile string
		want              []string
	}{
		{"private CA", "tls://" + addr, ca.CAFile, nil},
		{"nats scheme, TLS required by the server", "nats://" + addr, ca.CAFile, nil},
		{"untrusted CA", "tls://" + addr, rogue.CAFile, []string{"connecting to NATS at tls://", addr, "x509", "unknown authority"}},
		{"no CA: the system roots", "tls://" + addr, "", []string{"connecting to NATS", "x509"}},
		{"missing CA file", "tls://" + addr, filepath.Join(dir, "absent.pem"), []string{"connecting to NATS", "absent.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := secConfig(t)
			cfg.NATS.URL, cfg.NATS.TLSCA = tc.url, tc.caFile
			if tc.want == nil {
				runAuthorized(t, cfg, nil)
			} else {
				runRefused(t, cfg, tc.want, nil)
			}
		})
	}
}

func TestSecurityMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := natstest.NewPKI(t, dir, "dcgp")
	rogue := natstest.NewPKI(t, dir, "rogue")
	s := tlsServer(t, ca, true)
	addr := hostPort(s)
	cert, key, keyPEM := ca.Issue(t, "client", x509.ExtKeyUsageClientAuth)
	rcert, rkey, rkeyPEM := rogue.Issue(t, "rogue-client", x509.ExtKeyUsageClientAuth)
	secrets := []string{keyPEM, rkeyPEM}
	for _, tc := range []struct {
		name, cert, key string
		want            []string
	}{
		{"client certificate", cert, key, nil},
		// With TLS 1.3 the client finishes its handshake before the server
		// checks the certificate, so the error is either the server's alert
		// ("tls: certificate required") or "tls error: connection closed by
		// remote after TLS handshake", whichever the client reads first.
		{"no client certificate", "", "", []string{"connecting to NATS at tls://", addr, "tls"}},
		// Go's TLS client sends no certificate the server's CA list refuses.
		{"client certificate from another CA", rcert, rkey, []string{"connecting to NATS at tls://", addr, "tls"}},
		{"key does not match the certificate", cert, rkey, []string{"connecting to NATS", "private key does not match"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := secConfig(t)
			cfg.NATS.URL, cfg.NATS.TLSCA = "tls://"+addr, ca.CAFile
			cfg.NATS.TLSCert, cfg.NATS.TLSKey = tc.cert, tc.key
			if tc.want == nil {
				runAuthorized(t, cfg, secrets)
			} else {
				runRefused(t, cfg, tc.want, secrets)
			}
		})
	}
}

// TestSecurityHTTPLoopbackByDefault: the health and metrics endpoint and
// the embedded NATS server listen on loopback unless a configuration
// names another address; dcgpd.toml keeps them there too.
func TestSecurityHTTPLoopbackByDefault(t *testing.T) {
	loopback := func(t *testing.T, key, addr string) {
		t.Helper()
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("%s %q: %v", key, addr, err)
		}
		ips, err := net.LookupIP(host)
		if err != nil || len(ips) == 0 {
			t.Fatalf("%s %q: host does not resolve: %v", key, addr, err)
		}
		for _, ip := range ips {
			if !ip.IsLoopback() {
				t.Errorf("%s %q resolves to %v, not a loopback address", key, addr, ip)
			}
		}
	}
	d := config.DefaultConfig()
	loopback(t, "DefaultConfig().HTTP.Listen", d.HTTP.Listen)
	loopback(t, "DefaultConfig().NATS.Listen", d.NATS.Listen)

	minimal := "[[models]]\nname = \"m\"\nbin = \"1h\"\n[[models.product]]\nname = \"a\"\n"
	c, err := config.DecodeConfig([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	loopback(t, "http.listen left out", c.HTTP.Listen)
	loopback(t, "nats.listen left out", c.NATS.Listen)

	ex, err := config.LoadConfig("../dcgpd.toml")
	if err != nil {
		t.Fatal(err)
	}
	loopback(t, "dcgpd.toml http.listen", ex.HTTP.Listen)
	loopback(t, "dcgpd.toml nats.listen", ex.NATS.Listen)

	// Another address is taken only when written out, and off loopback
	// only with credentials (TestSecurityHTTPAuth); an empty one (every
	// interface, a random port) is refused.
	for _, tc := range []struct{ listen, err string }{
		{"0.0.0.0:9464", `http.listen: "0.0.0.0:9464": off loopback the page, its API and /metrics need credentials`},
		{":9464", `http.listen: ":9464": off loopback`},
		{"localhost:9464", ""},
		{"off", ""},
		{"", "http.listen: empty"},
	} {
		c, err := config.DecodeConfig([]byte("[http]\nlisten = \"" + tc.listen + "\"\n" + minimal))
		switch {
		case tc.err == "" && (err != nil || c.HTTP.Listen != tc.listen):
			t.Errorf("http.listen = %q: got %q, %v", tc.listen, c.HTTP.Listen, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), "2: "+tc.err)):
			t.Errorf("http.listen = %q: got %v, want an error on line 2 naming %q", tc.listen, err, tc.err)
		}
	}
}

// TestSecurityBadInputKeepsFlowing: an input message over the size limit
// is refused by the input stream itself (MaxMessageBytes), malformed and
// absurd messages are published as rejections with their reason, and a
// good bin after them is still estimated.
func TestSecurityBadInputKeepsFlowing(t *testing.T) {
	cfg := secConfig(t)
	cfg.NATS.Listen = "127.0.0.1:-1"
	cfg.NATS.StoreDir = filepath.Join(t.TempDir(), "js")
	r := startDaemon(t, cfg)
	subject := "dcgp.obs." + secModel
	var mu sync.Mutex
	var rejected []wire.RejectionMessage
	if _, err := r.nc.Subscribe("dcgp.rejected."+secModel, func(m *nats.Msg) {
		var rm wire.RejectionMessage
		if err := json.Unmarshal(m.Data, &rm); err != nil {
			t.Errorf("undecodable rejection %q: %v", m.Data, err)
			return
		}
		mu.Lock()
		rejected = append(rejected, rm)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	col := collect(t, r.nc, "dcgp.latent."+secModel)
	if err := r.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	big := bytes.Repeat([]byte(" "), wire.MaxMessageBytes+1)
	if _, err := r.js.Publish(ctx, subject, big); err == nil {
		t.Error("a message over MaxMessageBytes was stored in the input stream")
	} else {
		t.Logf("oversized message refused by the stream: %v", err)
	}
	bad := []struct{ data, reason string }{
		{`not json`, wire.ReasonMalformed},
		{`{"schema":1,"model":"sec","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":-1}`, wire.ReasonValue},
		{`{"schema":1,"model":"sec","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1e300}`, wire.ReasonValue},
		{`{"schema":2,"model":"sec","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1}`, wire.ReasonSchema},
		{`{"schema":1,"model":"other","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1}`, wire.ReasonModel},
		{`{"schema":1,"model":"sec","bin_start":"2024-01-01T00:00:00Z","product":"zz","demand":1}`, wire.ReasonProduct},
		{`{"schema":1,"model":"sec","bin_start":"2024-01-01T00:00:00Z","product":"a","demand":1,"admin":true}`, wire.ReasonMalformed},
	}
	for _, b := range bad {
		if _, err := r.js.Publish(ctx, subject, []byte(b.data)); err != nil {
			t.Fatal(err)
		}
	}
	three, five := 3.0, 5.0
	start := origin
	good, _ := json.Marshal(wire.ObsMessage{Schema: 1, Model: secModel, BinStart: &start,
		Observations: []wire.Observation{{Product: "a", Demand: &three}, {Product: "b", Demand: &five}}})
	if _, err := r.js.Publish(ctx, subject, good); err != nil {
		t.Fatal(err)
	}
	col.wait(t, "the good bin's estimate", 10*time.Second, func(ms []wire.LatentMessage) bool { return count(wire.KindFiltered)(ms) >= 1 })
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(rejected)
		mu.Unlock()
		if n >= len(bad) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rejections, want %d", n, len(bad))
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// Shape errors are refused as they arrive, the rest by the model's
	// runner: compare the reasons as multisets.
	want, got := map[string]int{}, map[string]int{}
	for _, b := range bad {
		want[b.reason]++
	}
	for _, rm := range rejected {
		got[rm.Reason]++
		if rm.Model != secModel || rm.Detail == "" {
			t.Errorf("rejection %+v", rm)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rejection reasons %v, want %v", got, want)
	}
}
