package config

import (
	"errors"
	"fmt"
	"regexp"

	"golang.org/x/crypto/bcrypt"
)

// ServerTLSConfig is the embedded NATS server's TLS, as nats-server's own
// tls block: a certificate and key, and optionally a CA whose
// certificates clients must present (verify).
type ServerTLSConfig struct {
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
	// CAFile verifies client certificates (with Verify).
	CAFile string `toml:"ca_file"`
	// Verify requires every client, the daemon included (it presents
	// nats.tls_cert and nats.tls_key), to present a certificate CAFile
	// signed.
	Verify bool `toml:"verify"`
}

// Enabled reports whether the embedded server serves TLS.
func (t ServerTLSConfig) Enabled() bool { return t.CertFile != "" }

// Roles of the embedded server's users (NATSUser.Role).
const (
	// RoleReader subscribes to the estimates, forecasts and risk, reads
	// their streams and key-value buckets and queries the dcgpd service;
	// it publishes no input and changes no stream.
	RoleReader = "reader"
	// RolePublisher publishes input (observations and status feeds) and
	// reads its publish acknowledgements; nothing else.
	RolePublisher = "publisher"
	// RoleAdmin may do everything, as the daemon's own connection does.
	RoleAdmin = "admin"
)

// NATSUser is one of the embedded server's users ([[nats.users]]): a
// name, a role and its credential, a bcrypt hash of its password or its
// public nkey (the seed stays with the user).
type NATSUser struct {
	Name         string `toml:"name"`
	Role         string `toml:"role"`
	PasswordHash string `toml:"password_hash"`
	NKey         string `toml:"nkey"`
}

// bcryptRe is the form nats-server takes as a bcrypt hash (it compares
// anything else as a plain password).
var bcryptRe = regexp.MustCompile(`^\$2[abxy]\$\d{2}\$`)

// checkBcrypt refuses a value that is not a bcrypt hash, without showing
// it (it may be a password written in the wrong key).
func checkBcrypt(key, hash string) error {
	if !bcryptRe.MatchString(hash) {
		return fmt.Errorf("%s: not a bcrypt hash (value not shown); write the hash of the password (`htpasswd -bnBC 11 \"\" PASSWORD | tr -d ':\\n'` or `nats server passwd`), never the password", key)
	}
	if _, err := bcrypt.Cost([]byte(hash)); err != nil {
		return fmt.Errorf("%s: not a valid bcrypt hash (value not shown): %w", key, err)
	}
	return nil
}

// validateEmbeddedSecurity checks [nats.server_tls] and [[nats.users]].
func (n *NATSConfig) validateEmbeddedSecurity() error {
	st := n.ServerTLS
	if n.URL != "" {
		switch {
		case st != ServerTLSConfig{}:
			return errors.New("nats.server_tls: only for the embedded server (nats.url is set: the external server's TLS is its own configuration)")
		case len(n.Users) > 0:
			return errors.New("nats.users: only for the embedded server (nats.url is set: the external server's users are its own configuration)")
		}
		return nil
	}
	if (st.CertFile == "") != (st.KeyFile == "") {
		return errors.New("nats.server_tls.cert_file and nats.server_tls.key_file go together")
	}
	if st.CAFile != "" && !st.Enabled() {
		return errors.New("nats.server_tls.ca_file: needs nats.server_tls.cert_file and key_file")
	}
	if st.Verify && st.CAFile == "" {
		return errors.New("nats.server_tls.verify: needs nats.server_tls.ca_file, the CA client certificates must come from")
	}
	if st.Verify && n.TLSCert == "" {
		return errors.New("nats.server_tls.verify: the daemon connects to its own server too; give it a client certificate in nats.tls_cert and nats.tls_key")
	}
	if len(n.Users) == 0 {
		return nil
	}
	if n.Token != "" {
		return errors.New("nats.token: nats-server cannot combine a token with [[nats.users]]; the daemon connects with nats.user and nats.password or nats.nkey_file")
	}
	if n.User == "" && n.NKeyFile == "" {
		return errors.New("nats.users: the daemon needs its own credentials, nats.user and nats.password or nats.nkey_file (it connects as an admin)")
	}
	seen := map[string]bool{n.User: n.User != ""}
	for i, u := range n.Users {
		key := fmt.Sprintf("nats.users[%d]", i)
		switch {
		case u.Name == "":
			return fmt.Errorf("%s.name: empty", key)
		case seen[u.Name]:
			return fmt.Errorf("%s.name: %q appears twice (nats.user is the daemon's own)", key, u.Name)
		case u.Role != RoleReader && u.Role != RolePublisher && u.Role != RoleAdmin:
			return fmt.Errorf("%s.role: %q is not reader, publisher or admin", key, u.Role)
		case (u.PasswordHash == "") == (u.NKey == ""):
			return fmt.Errorf("%s: give one of password_hash and nkey", key)
		case u.NKey != "" && !looksLikeUserNKey(u.NKey):
			return fmt.Errorf("%s.nkey: %q is not a public user nkey (U…; `nk -gen user -pubout`)", key, u.NKey)
		}
		if u.PasswordHash != "" {
			if err := checkBcrypt(key+".password_hash", u.PasswordHash); err != nil {
				return err
			}
		}
		seen[u.Name] = true
	}
	return nil
}

// ErrHTTPOpen refuses a page and API off loopback that anyone could read.
var ErrHTTPOpen = errors.New("off loopback the page, its API and /metrics need credentials")

// validate checks [http]'s credentials and TLS: off loopback, a username
// and password hash or a token file is required, and TLS unless
// insecure_no_tls says the network protects the credentials.
func (h *HTTPConfig) validate() error {
	if (h.Username == "") != (h.PasswordHash == "") {
		return errors.New("http.username and http.password_hash go together")
	}
	if h.PasswordHash != "" {
		if err := checkBcrypt("http.password_hash", h.PasswordHash); err != nil {
			return err
		}
	}
	if (h.TLSCert == "") != (h.TLSKey == "") {
		return errors.New("http.tls_cert and http.tls_key go together")
	}
	if h.Listen == "off" || LoopbackListen(h.Listen) {
		return nil
	}
	if h.Username == "" && h.TokenFile == "" {
		return fmt.Errorf("http.listen: %q: %w; set http.username and http.password_hash, or http.token_file", h.Listen, ErrHTTPOpen)
	}
	if h.TLSCert == "" && !h.InsecureNoTLS {
		return fmt.Errorf("http.listen: %q: the credentials would cross the network in clear; set http.tls_cert and http.tls_key (or http.insecure_no_tls = true where the network itself is encrypted)", h.Listen)
	}
	return nil
}

// looksLikeUserNKey reports whether s has the form of a public user nkey:
// "U" and 55 more characters of the base32 alphabet (a 35-byte key with
// its checksum). The checksum itself is verified where the embedded
// server's users are built (natsio.EmbeddedAuthOf), with nkeys: the
// configuration imports nothing of NATS.
func looksLikeUserNKey(s string) bool {
	if len(s) != 56 || s[0] != 'U' {
		return false
	}
	for _, r := range s {
		if !('A' <= r && r <= 'Z' || '2' <= r && r <= '7') {
			return false
		}
	}
	return true
}
