package config

import (
	"strings"
	"testing"
)

// serverTLS gives the embedded server a certificate (the files are read
// only when the server starts).
const serverTLS = `server_tls = { cert_file = "server.pem", key_file = "server-key.pem" }`

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
		{"listen = \"0.0.0.0:4222\"\ntoken = \"t\"\n" + serverTLS, ""},
		{"listen = \"0.0.0.0:4222\"\nuser = \"u\"\npassword = \"p\"\n" + serverTLS, ""},
		{"listen = \"0.0.0.0:4222\"\nnkey_file = \"u.nk\"\n" + serverTLS, ""},
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
}
