package daemon

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/dcgpd/dcgpd/config"
)

// TestHTTPServerLimits: every limit of the daemon's HTTP server is set,
// the write bound above the read bound (the answers are the large part).
func TestHTTPServerLimits(t *testing.T) {
	s := newHTTPServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout < s.ReadHeaderTimeout || s.WriteTimeout <= s.ReadTimeout || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 || s.MaxHeaderBytes >= http.DefaultMaxHeaderBytes {
		t.Errorf("limits: header %v, read %v, write %v, idle %v, header bytes %d", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
}

// TestHTTPAuthCheck: the credentials a request may carry, one by one;
// a cached password never lets another one in, and a token file that is
// short or has several lines is refused without showing it.
func TestHTTPAuthCheck(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("0123456789abcdef-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("right-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newHTTPAuth(&config.HTTPConfig{Username: "ops", PasswordHash: string(hash), TokenFile: tok})
	if err != nil {
		t.Fatal(err)
	}
	req := func(set func(*http.Request)) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		set(r)
		return r
	}
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	header := func(v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set("Authorization", v) } }
	for _, c := range []struct {
		name string
		set  func(*http.Request)
		want error
	}{
		{"nothing", func(*http.Request) {}, errNoCredentials},
		{"wrong password", basic("ops", "wrong"), errBadCredentials},
		{"right password", basic("ops", "right-pw"), nil},
		{"right password, cached", basic("ops", "right-pw"), nil},
		{"wrong password after the cached one", basic("ops", "right-pw2"), errBadCredentials},
		{"wrong user, right password", basic("root", "right-pw"), errBadCredentials},
		{"token", header("Bearer 0123456789abcdef-token"), nil},
		{"token prefix", header("Bearer 0123456789abcdef"), errBadCredentials},
		{"other scheme", header("Digest x"), errBadCredentials},
	} {
		if got := a.check(req(c.set)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	for _, bad := range []string{"short\n", "0123456789abcdef\nsecond-line-token\n"} {
		if err := os.WriteFile(tok, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := newHTTPAuth(&config.HTTPConfig{TokenFile: tok}); err == nil {
			t.Errorf("token file %q accepted", bad)
		}
	}
	if a, err := newHTTPAuth(&config.HTTPConfig{}); a != nil || err != nil {
		t.Errorf("no credentials: %v, %v; want none required", a, err)
	}
}
