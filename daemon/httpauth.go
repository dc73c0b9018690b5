package daemon

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/dcgpd/dcgpd/config"
)

// The HTTP server's limits. No route reads a request body and none
// streams; the write bound leaves room for the largest JSON answer (a
// 2,000-product model's /api/models/{model}, tens of MB).
const (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 10 * time.Second
	httpWriteTimeout      = 60 * time.Second
	httpIdleTimeout       = 120 * time.Second
	httpMaxHeaderBytes    = 16 << 10
)

// newHTTPServer is the daemon's HTTP server with its limits set.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: httpReadHeaderTimeout, ReadTimeout: httpReadTimeout,
		WriteTimeout: httpWriteTimeout, IdleTimeout: httpIdleTimeout, MaxHeaderBytes: httpMaxHeaderBytes}
}

// httpTLS loads [http]'s certificate (nil without one).
func httpTLS(c *config.HTTPConfig) (*tls.Config, error) {
	if c.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("http.tls_cert, http.tls_key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// httpAuth checks a request's credentials against [http]'s: a bearer
// token (token_file) or HTTP basic authentication (username and the
// bcrypt password_hash). Comparisons are in constant time on SHA-256
// digests, so neither content nor length leaks through timing; a
// password is checked by bcrypt once, and the digest of the last
// accepted username and password is kept so that the page's polling
// does not pay bcrypt's cost on every request.
type httpAuth struct {
	token    *[sha256.Size]byte // digest of the token; nil: no token
	user     [sha256.Size]byte  // digest of the username
	hash     []byte             // bcrypt hash; nil: no basic authentication
	accepted atomic.Pointer[[sha256.Size]byte]
}

// newHTTPAuth reads [http]'s credentials (nil: none configured, every
// request is let through, as on loopback without credentials).
func newHTTPAuth(c *config.HTTPConfig) (*httpAuth, error) {
	if c.TokenFile == "" && c.PasswordHash == "" {
		return nil, nil
	}
	a := &httpAuth{}
	if c.TokenFile != "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("http.token_file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if len(tok) < 16 || strings.ContainsAny(tok, " \t\r\n") {
			return nil, fmt.Errorf("http.token_file %s: the token must be one line of at least 16 characters without spaces (content not shown)", c.TokenFile)
		}
		d := sha256.Sum256([]byte(tok))
		a.token = &d
	}
	if c.PasswordHash != "" {
		a.user = sha256.Sum256([]byte(c.Username))
		a.hash = []byte(c.PasswordHash)
	}
	return a, nil
}

// errNoCredentials and errBadCredentials are logged, never shown.
var (
	errNoCredentials  = errors.New("no credentials")
	errBadCredentials = errors.New("wrong credentials")
)

// check reports whether r carries accepted credentials.
func (a *httpAuth) check(r *http.Request) error {
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok && a.token != nil {
		d := sha256.Sum256([]byte(tok))
		if subtle.ConstantTimeCompare(d[:], a.token[:]) == 1 {
			return nil
		}
		return errBadCredentials
	}
	user, pass, ok := r.BasicAuth()
	if !ok || a.hash == nil {
		if h == "" {
			return errNoCredentials
		}
		return errBadCredentials
	}
	ud := sha256.Sum256([]byte(user))
	pair := sha256.Sum256([]byte(user + "\x00" + pass))
	if last := a.accepted.Load(); last != nil && subtle.ConstantTimeCompare(pair[:], last[:]) == 1 {
		return nil
	}
	// bcrypt runs whatever the username, so a wrong name costs as much
	// as a wrong password.
	userOK := subtle.ConstantTimeCompare(ud[:], a.user[:]) == 1
	passOK := bcrypt.CompareHashAndPassword(a.hash, []byte(pass)) == nil
	if !userOK || !passOK {
		return errBadCredentials
	}
	a.accepted.Store(&pair)
	return nil
}

// wrap requires credentials on every route but open (the liveness and
// readiness probes, whose answers say nothing but "ok" or "not ready":
// orchestrators' probes rarely carry secrets).
func (a *httpAuth) wrap(next http.Handler, log func(r *http.Request, err error), open ...string) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range open {
			if r.URL.Path == p {
				next.ServeHTTP(w, r)
				return
			}
		}
		if err := a.check(r); err != nil {
			log(r, err)
			if a.hash != nil {
				w.Header().Add("WWW-Authenticate", `Basic realm="dcgpd", charset="UTF-8"`)
			}
			if a.token != nil {
				w.Header().Add("WWW-Authenticate", `Bearer realm="dcgpd"`)
			}
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
