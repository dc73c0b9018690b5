package natsio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
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
		cfg   config.NATSConfig
		wrong config.NATSConfig
	}{
		{"token", config.NATSConfig{Token: "s3cret-token"}, config.NATSConfig{Token: "guess"}},
		{"user", config.NATSConfig{User: "dcgpd", Password: "pw-1"}, config.NATSConfig{User: "dcgpd", Password: "pw-2"}},
		{"nkey", config.NATSConfig{NKeyFile: seedFile}, config.NATSConfig{NKeyFile: otherFile}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Listen = "127.0.0.1:-1"
			auth, err := EmbeddedAuthOf(&c.cfg)
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

// TestEmbeddedAuthNKeyFile: a missing or malformed nkey_file is refused
// naming the key, without showing the file's content.
func TestEmbeddedAuthNKeyFile(t *testing.T) {
	if _, err := EmbeddedAuthOf(&config.NATSConfig{Listen: "127.0.0.1:-1", NKeyFile: filepath.Join(t.TempDir(), "missing.nk")}); err == nil || !strings.Contains(err.Error(), "nats.nkey_file") {
		t.Errorf("missing nkey file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.nk")
	_ = os.WriteFile(bad, []byte("SUnot-a-seed-hunter2"), 0o600)
	if _, err := EmbeddedAuthOf(&config.NATSConfig{Listen: "127.0.0.1:-1", NKeyFile: bad}); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad nkey file: %v (must fail without showing the content)", err)
	}
}

// TestEmbeddedAuthUserNKeyChecksum: a [[nats.users]] nkey of the right
// form whose checksum fails (one character changed) is refused at start,
// naming the key; the configuration only checks the form.
func TestEmbeddedAuthUserNKeyChecksum(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	flip := byte('A')
	if pub[10] == 'A' {
		flip = 'B'
	}
	bad := pub[:10] + string(flip) + pub[11:]
	for _, c := range []struct {
		key, want string
	}{
		{pub, ""},
		{bad, "nats.users[1].nkey: "},
	} {
		n := config.DefaultConfig().NATS
		n.User, n.Password = "dcgpd", "secret"
		n.Users = []config.NATSUser{
			{Name: "feed", Role: config.RolePublisher, NKey: pub},
			{Name: "dash", Role: config.RoleReader, NKey: c.key},
		}
		_, err := EmbeddedAuthOf(&n)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("a valid nkey: %v", err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("nkey %q: %v, want an error starting %q", c.key, err, c.want)
		}
	}
}
