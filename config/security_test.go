package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigSizeLimit: a configuration of MaxConfigBytes is read; one
// byte more, in memory, in a file or from an endless device, is refused
// with an error naming the file and the limit, without reading on.
func TestConfigSizeLimit(t *testing.T) {
	pad := func(n int) []byte {
		b := []byte(goodConfig + "#")
		b = append(b, strings.Repeat("x", n-len(b)-1)...)
		return append(b, '\n')
	}
	if _, err := DecodeConfig(pad(MaxConfigBytes)); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if _, err := DecodeConfig(pad(MaxConfigBytes + 1)); err == nil || !strings.HasPrefix(err.Error(), "0: ") || !strings.Contains(err.Error(), "MaxConfigBytes") {
		t.Fatalf("one byte over, in memory: %v", err)
	}
	p := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(p, pad(MaxConfigBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(p); err == nil || !strings.HasPrefix(err.Error(), p+":0: ") || !strings.Contains(err.Error(), "MaxConfigBytes") {
		t.Fatalf("one byte over, in a file: %v", err)
	}
	t.Run("endless device", func(t *testing.T) {
		if _, err := os.Stat("/dev/zero"); err != nil {
			t.Skipf("no /dev/zero here: %v", err)
		}
		if _, err := LoadConfig("/dev/zero"); err == nil || !strings.Contains(err.Error(), "MaxConfigBytes") {
			t.Fatalf("/dev/zero: %v", err)
		}
	})
}

// TestConfigErrorHidesSecrets: a malformed password or token is reported
// by line, without the piece of it the TOML parser quotes.
func TestConfigErrorHidesSecrets(t *testing.T) {
	for _, line := range []string{
		"password = hunter2secret",
		"token = hunter2secret",
		"token = 'hunter2secret' trailing",
		`password = "hunter2secret`,
		"password = 0xhunter2secret",
	} {
		in := "[nats]\n" + line + "\n" + goodConfig
		_, err := DecodeConfig([]byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), "2: ") {
			t.Errorf("%s: got %v, want an error on line 2", line, err)
			continue
		}
		if strings.Contains(err.Error(), "hunter") {
			t.Errorf("%s: the error shows the secret: %v", line, err)
		}
	}
	// Other keys keep the parser's message.
	_, err := DecodeConfig([]byte("[nats]\nprefix = dcgp\n" + goodConfig))
	if err == nil || !strings.Contains(err.Error(), "dcgp") {
		t.Errorf("prefix: %v", err)
	}
}

// TestConfigCredentials: one credential method at most, a password only
// with a user, and credential and TLS files relative to the
// configuration file (as dcgpd.toml documents), absolute ones kept.
func TestConfigCredentials(t *testing.T) {
	for _, c := range []struct{ nats, want string }{
		{"user = \"u\"\npassword = \"p\"", ""},
		{"token = \"t\"", ""},
		{"user = \"u\"\ntoken = \"t\"", "2: nats: give at most one of creds_file, nkey_file, token and user"},
		{"nkey_file = \"a.nk\"\ncreds_file = \"a.creds\"", "2: nats: give at most one"},
		{"password = \"p\"", "3: nats.password: needs nats.user"},
	} {
		_, err := DecodeConfig([]byte("\n[nats]\n" + c.nats + "\n" + strings.Replace(goodConfig, "[nats]\n", "", 1)))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%q: got %v, want %q", c.nats, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), `"p"`) {
			t.Errorf("%q: the error shows the password: %v", c.nats, err)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "dcgpd.toml")
	abs := filepath.Join(t.TempDir(), "ca.pem")
	in := "[nats]\nurl = \"tls://a:4222\"\nnkey_file = \"keys/user.nk\"\ntls_ca = \"" + abs + "\"\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n" + strings.Replace(goodConfig, "[nats]\n", "", 1)
	if err := os.WriteFile(p, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	n := c.NATS
	if n.NKeyFile != filepath.Join(dir, "keys/user.nk") || n.TLSCA != abs || n.TLSCert != filepath.Join(dir, "c.pem") || n.TLSKey != filepath.Join(dir, "k.pem") || n.CredsFile != "" {
		t.Errorf("paths: %+v", n)
	}
}

// TestConfigInlineProductNames: inline product names are written into a
// products CSV; a comma, quote, control character or surrounding space
// would change what that CSV says, so each is refused by key and line.
func TestConfigInlineProductNames(t *testing.T) {
	for _, name := range []string{`a,1`, `a\"b`, `a\nb`, ` a`, `a\u0000`} {
		in := strings.Replace(goodConfig, `name = "a"`, `name = "`+name+`"`, 1)
		_, err := DecodeConfig([]byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), "9: models[0] (midtown).product[0].name") {
			t.Errorf("%s: got %v", name, err)
		}
	}
	if _, err := DecodeConfig([]byte(strings.Replace(goodConfig, `name = "a"`, `name = "Broadway & 42nd St (north)"`, 1))); err != nil {
		t.Errorf("an ordinary name: %v", err)
	}
}
