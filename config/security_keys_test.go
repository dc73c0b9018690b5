package config

import (
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"
)

// checkCases decodes "[section]\n" + each case's keys before base and
// wants no error (want "") or an error containing want and none of hide.
func checkCases(t *testing.T, section, base string, cases []struct{ keys, want string }, hide ...string) {
	t.Helper()
	for _, c := range cases {
		_, err := DecodeConfig([]byte("[" + section + "]\n" + c.keys + "\n" + base))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: got %v, want %q", c.keys, err, c.want)
		}
		for _, h := range hide {
			if err != nil && strings.Contains(err.Error(), h) {
				t.Errorf("%q: the error shows a secret: %v", c.keys, err)
			}
		}
	}
}

// TestEmbeddedListenNeedsTLS: an embedded server off loopback with any
// credential and no server certificate is refused by key (the token or
// password would cross the network in clear), unless insecure_no_tls
// says so; loopback needs no TLS; the server_tls keys are checked.
func TestEmbeddedListenNeedsTLS(t *testing.T) {
	base := strings.Replace(goodConfig, "[nats]\nlisten = \"127.0.0.1:-1\"\n", "", 1)
	const clear = "listens off loopback without TLS (credentials and messages in clear); set nats.server_tls.cert_file and nats.server_tls.key_file"
	checkCases(t, "nats", base, []struct{ keys, want string }{
		{"listen = \"0.0.0.0:4222\"\ntoken = \"t\"", clear},
		{"listen = \"10.0.0.5:4222\"\nuser = \"u\"\npassword = \"p\"", clear},
		{"listen = \":4222\"\nnkey_file = \"u.nk\"", clear},
		{"listen = \"0.0.0.0:4222\"\ntoken = \"t\"\ninsecure_no_tls = true", ""},
		{"listen = \"0.0.0.0:4222\"\ntoken = \"t\"\n" + serverTLS, ""},
		{"listen = \"127.0.0.1:4222\"\ntoken = \"t\"", ""},
		{"listen = \"127.0.0.1:4222\"\nserver_tls = { cert_file = \"c.pem\" }", "nats.server_tls.cert_file and nats.server_tls.key_file go together"},
		{"listen = \"127.0.0.1:4222\"\nserver_tls = { ca_file = \"ca.pem\" }", "nats.server_tls.ca_file: needs"},
		{"listen = \"127.0.0.1:4222\"\nserver_tls = { cert_file = \"c.pem\", key_file = \"k.pem\", verify = true }", "nats.server_tls.verify: needs nats.server_tls.ca_file"},
		{"listen = \"127.0.0.1:4222\"\nserver_tls = { cert_file = \"c.pem\", key_file = \"k.pem\", ca_file = \"ca.pem\", verify = true }", "give it a client certificate in nats.tls_cert"},
		{"listen = \"127.0.0.1:4222\"\ntls_cert = \"d.pem\"\ntls_key = \"d-key.pem\"\nserver_tls = { cert_file = \"c.pem\", key_file = \"k.pem\", ca_file = \"ca.pem\", verify = true }", ""},
		{"url = \"tls://a:4222\"\n" + serverTLS, "nats.server_tls: only for the embedded server"},
	})
	// The refusal is on the listen line.
	_, err := DecodeConfig([]byte("[nats]\nlisten = \"0.0.0.0:4222\"\ntoken = \"t\"\n" + base))
	if err == nil || !strings.HasPrefix(err.Error(), "2: nats.listen") {
		t.Errorf("not on the listen line: %v", err)
	}
}

// TestNATSUsers: [[nats.users]] entries need a role and exactly one
// credential, a bcrypt hash (never a password: refused without showing
// it) or a public user nkey; the daemon needs its own user or nkey
// (nats-server takes no token beside users); users are for the embedded
// server only and count as authentication off loopback.
func TestNATSUsers(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	acc, _ := nkeys.CreateAccount()
	accPub, _ := acc.PublicKey()
	base := strings.Replace(goodConfig, "[nats]\nlisten = \"127.0.0.1:-1\"\n", "", 1)
	self := "listen = \"127.0.0.1:-1\"\nuser = \"dcgpd\"\npassword = \"p\"\n"
	user := func(fields string) string { return "[[nats.users]]\n" + fields + "\n" }
	reader := "name = \"dash\"\nrole = \"reader\"\npassword_hash = '" + string(hash) + "'"
	checkCases(t, "nats", base, []struct{ keys, want string }{
		{self + user(reader), ""},
		{self + user("name = \"feed\"\nrole = \"publisher\"\nnkey = \""+pub+"\""), ""},
		{self + user("name = \"ops\"\nrole = \"admin\"\nnkey = \""+pub+"\""), ""},
		{self + user("name = \"dash\"\nrole = \"root\"\nnkey = \""+pub+"\""), `nats.users[0].role: "root" is not reader, publisher or admin`},
		{self + user("name = \"dash\"\nrole = \"reader\""), "nats.users[0]: give one of password_hash and nkey"},
		{self + user(reader+"\nnkey = \""+pub+"\""), "nats.users[0]: give one of password_hash and nkey"},
		{self + user("name = \"dash\"\nrole = \"reader\"\npassword_hash = \"hunter2plain\""), "nats.users[0].password_hash: not a bcrypt hash"},
		{self + user("name = \"dash\"\nrole = \"reader\"\nnkey = \""+accPub+"\""), "nats.users[0].nkey: "},
		{self + user("role = \"reader\"\nnkey = \""+pub+"\""), "nats.users[0].name: empty"},
		{self + user(reader) + user(reader), `nats.users[1].name: "dash" appears twice`},
		{self + user("name = \"dcgpd\"\nrole = \"reader\"\nnkey = \""+pub+"\""), `nats.users[0].name: "dcgpd" appears twice`},
		{"listen = \"127.0.0.1:-1\"\n" + user(reader), "nats.users: the daemon needs its own credentials"},
		{"listen = \"127.0.0.1:-1\"\ntoken = \"t\"\n" + user(reader), "nats.token: nats-server cannot combine a token with [[nats.users]]"},
		{"url = \"nats://a:4222\"\nuser = \"dcgpd\"\npassword = \"p\"\n" + user(reader), "nats.users: only for the embedded server"},
		// Users alone make a listener off loopback authenticated, so TLS
		// is what it then needs.
		{"listen = \"0.0.0.0:4222\"\nnkey_file = \"d.nk\"\n" + user(reader), "without TLS"},
		{"listen = \"0.0.0.0:4222\"\nnkey_file = \"d.nk\"\n" + serverTLS + "\n" + user(reader), ""},
	}, "hunter2plain")
}

// TestHTTPListenNeedsCredentials: the page, its API and /metrics off
// loopback are refused without credentials and, with them, without TLS
// (unless insecure_no_tls); a password is taken only as a bcrypt hash.
func TestHTTPListenNeedsCredentials(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	h := "password_hash = '" + string(hash) + "'"
	tls := "tls_cert = \"c.pem\"\ntls_key = \"k.pem\""
	checkCases(t, "http", goodConfig, []struct{ keys, want string }{
		{`listen = "127.0.0.1:9464"`, ""},
		{`listen = "localhost:0"`, ""},
		{`listen = "off"`, ""},
		{`listen = "0.0.0.0:9464"`, `http.listen: "0.0.0.0:9464": off loopback the page, its API and /metrics need credentials; set http.username and http.password_hash, or http.token_file`},
		{`listen = ":9464"`, "need credentials"},
		{"listen = \"0.0.0.0:9464\"\ntoken_file = \"t\"", "http.listen: \"0.0.0.0:9464\": the credentials would cross the network in clear; set http.tls_cert and http.tls_key"},
		{"listen = \"0.0.0.0:9464\"\ntoken_file = \"t\"\n" + tls, ""},
		{"listen = \"0.0.0.0:9464\"\nusername = \"ops\"\n" + h + "\n" + tls, ""},
		{"listen = \"0.0.0.0:9464\"\nusername = \"ops\"\n" + h + "\ninsecure_no_tls = true", ""},
		{"listen = \"127.0.0.1:9464\"\nusername = \"ops\"", "http.username and http.password_hash go together"},
		{"listen = \"127.0.0.1:9464\"\nusername = \"ops\"\npassword_hash = \"hunter2plain\"", "http.password_hash: not a bcrypt hash"},
		{"listen = \"127.0.0.1:9464\"\ntls_cert = \"c.pem\"", "http.tls_cert and http.tls_key go together"},
	}, "hunter2plain")
}
