package stream

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
)

// TestEmbeddedAuth: with a token, a user and password or an nkey, the
// embedded server refuses a client without them or with wrong ones and
// accepts Connect with the daemon's own [nats] keys.
func TestEmbeddedAuth(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := filepath.Join(t.TempDir(), "other.nk")
	if err := os.WriteFile(otherFile, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		cfg   NATSConfig
		wrong NATSConfig
	}{
		{"token", NATSConfig{Token: "s3cret-token"}, NATSConfig{Token: "guess"}},
		{"user", NATSConfig{User: "dcgpd", Password: "pw-1"}, NATSConfig{User: "dcgpd", Password: "pw-2"}},
		{"nkey", NATSConfig{NKeyFile: seedFile}, NATSConfig{NKeyFile: otherFile}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Listen = "127.0.0.1:-1"
			auth, err := embeddedAuth(&c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			emb, err := StartEmbeddedAuth(c.cfg.Listen, t.TempDir(), auth, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer emb.Shutdown()
			if nc, err := nats.Connect(emb.ClientURL(), nats.MaxReconnects(0)); err == nil {
				nc.Close()
				t.Fatal("a client without credentials was let in")
			} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
				t.Fatalf("no credentials: %v, want an authorization error", err)
			}
			if nc, err := Connect(&c.wrong, emb, "wrong", zerolog.Nop()); err == nil {
				nc.Close()
				t.Fatal("a client with wrong credentials was let in")
			}
			nc, err := Connect(&c.cfg, emb, "right", zerolog.Nop())
			if err != nil {
				t.Fatalf("the daemon's own credentials: %v", err)
			}
			nc.Close()
		})
	}
}

// TestEmbeddedListenRefusedOpen: an embedded listener off loopback with no
// credentials is refused by Validate, by key, unless open_listen is set;
// loopback needs nothing; a creds file cannot protect the embedded server.
func TestEmbeddedListenRefusedOpen(t *testing.T) {
	base := strings.Replace(goodConfig, "[nats]\nlisten = \"127.0.0.1:-1\"\n", "", 1)
	for _, c := range []struct{ nats, want string }{
		{`listen = "127.0.0.1:-1"`, ""},
		{`listen = "[::1]:4222"`, ""},
		{`listen = "localhost:4222"`, ""},
		{`listen = "0.0.0.0:4222"`, "nats.listen: \"0.0.0.0:4222\": the embedded NATS server listens off loopback without authentication"},
		{`listen = ":4222"`, "off loopback"},
		{`listen = "10.1.2.3:4222"`, "off loopback"},
		{"listen = \"0.0.0.0:4222\"\nopen_listen = true", ""},
		{"listen = \"0.0.0.0:4222\"\ntoken = \"t\"", ""},
		{"listen = \"0.0.0.0:4222\"\nuser = \"u\"\npassword = \"p\"", ""},
		{"listen = \"0.0.0.0:4222\"\nnkey_file = \"u.nk\"", ""},
		{"listen = \"127.0.0.1:4222\"\ncreds_file = \"a.creds\"", "nats.creds_file: the embedded server has no operator"},
		{"url = \"nats://a:4222\"\nlisten = \"0.0.0.0:4222\"", ""}, // external server: listen unused
	} {
		_, err := DecodeConfig([]byte("[nats]\n" + c.nats + "\n" + base))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: got %v, want %q", c.nats, err, c.want)
		}
		if err != nil && strings.Contains(c.want, "loopback") && !strings.HasPrefix(err.Error(), "2: ") {
			t.Errorf("%q: error not on the listen line: %v", c.nats, err)
		}
	}
	if _, err := embeddedAuth(&NATSConfig{Listen: "127.0.0.1:-1", NKeyFile: filepath.Join(t.TempDir(), "missing.nk")}); err == nil || !strings.Contains(err.Error(), "nats.nkey_file") {
		t.Errorf("missing nkey file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.nk")
	_ = os.WriteFile(bad, []byte("SUnot-a-seed-hunter2"), 0o600)
	if _, err := embeddedAuth(&NATSConfig{Listen: "127.0.0.1:-1", NKeyFile: bad}); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad nkey file: %v (must fail without showing the content)", err)
	}
}
