package test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/bcrypt"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/daemon"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// TestSecurityHTTPAuth: with [http] credentials and a certificate the
// page, its JSON API, /api/risk and /metrics answer only a request with
// the right basic credentials or bearer token (401 with a challenge
// otherwise, wrong user, wrong password or wrong token alike), the two
// probes answer anyone, everything is HTTPS (a plain HTTP request gets no
// page), and a header over the server's limit is refused. Off loopback,
// no credentials or credentials without TLS are refused before anything
// starts.
func TestSecurityHTTPAuth(t *testing.T) {
	dir := t.TempDir()
	ca := natstest.NewPKI(t, dir, "dcgp")
	cert, key, _ := ca.Issue(t, "http", x509.ExtKeyUsageServerAuth)
	pass, token := secret(t, "pw-"), secret(t, "tok-")
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := writeFile(t, dir, "http.token", []byte(token+"\n"))
	tables := "[nats]\nlisten = \"127.0.0.1:-1\"\n[http]\nlisten = \"127.0.0.1:0\"\nusername = \"ops\"\npassword_hash = '" + string(hash) +
		"'\ntoken_file = \"" + tokenFile + "\"\ntls_cert = \"" + cert + "\"\ntls_key = \"" + key + "\"\n"
	d := startSec(t, secTOML(t, tables))
	base := "https://" + d.HTTPAddr()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(ca.CAFile)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("CA: %v", err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(t *testing.T, path string, auth func(*http.Request)) (int, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if auth != nil {
			auth(req)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	// What each route answers with the right credentials.
	for path, want := range map[string]int{"/": http.StatusOK, "/api/models": http.StatusOK, "/api/models/" + secModel: http.StatusOK,
		"/api/risk": http.StatusOK, "/metrics": http.StatusOK} {
		t.Run(path, func(t *testing.T) {
			for _, bad := range []struct {
				name string
				auth func(*http.Request)
			}{
				{"none", nil},
				{"wrong password", basic("ops", pass+"x")},
				{"wrong user", basic("root", pass)},
				{"wrong token", bearer(token + "x")},
				{"token as a password", basic("ops", token)},
			} {
				code, h := get(t, path, bad.auth)
				if code != http.StatusUnauthorized {
					t.Errorf("%s: status %d, want 401", bad.name, code)
				}
				if ch := strings.Join(h.Values("WWW-Authenticate"), ", "); !strings.Contains(ch, "Basic") || !strings.Contains(ch, "Bearer") {
					t.Errorf("%s: challenge %q", bad.name, ch)
				}
			}
			for _, good := range []struct {
				name string
				auth func(*http.Request)
			}{{"password", basic("ops", pass)}, {"password again (cached)", basic("ops", pass)}, {"token", bearer(token)}} {
				if code, _ := get(t, path, good.auth); code != want {
					t.Errorf("%s: status %d, want %d", good.name, code, want)
				}
			}
		})
	}
	t.Run("probes answer anyone", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, _ := get(t, path, nil); code != http.StatusOK {
				t.Errorf("%s: status %d, want 200", path, code)
			}
		}
	})
	t.Run("no plain HTTP", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + d.HTTPAddr() + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Fatalf("plain HTTP answered 200: %s", body)
			}
		}
	})
	t.Run("header limit", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
		req.Header.Set("X-Filler", strings.Repeat("x", 64<<10))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a 64 KiB header: status %d, want 431", resp.StatusCode)
		}
	})
	t.Run("off loopback", func(t *testing.T) {
		for _, tc := range []struct{ tables, want, key string }{
			{"[http]\nlisten = \"0.0.0.0:9464\"\n", "need credentials", "http.token_file"},
			{"[http]\nlisten = \"0.0.0.0:9464\"\ntoken_file = \"" + tokenFile + "\"\n", "in clear", "http.tls_cert"},
		} {
			_, err := config.DecodeConfig([]byte(tc.tables + "[[models]]\nname = \"m\"\nbin = \"1h\"\n[[models.product]]\nname = \"a\"\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.key) {
				t.Errorf("%q: %v, want a refusal naming %s", tc.tables, err, tc.key)
			}
			cfg := secConfig(t)
			cfg.HTTP.Listen = "0.0.0.0:9464"
			if _, err := daemon.New(cfg, zerolog.Nop()); err == nil {
				t.Error("daemon.New took a page off loopback without credentials")
			}
		}
	})
}
