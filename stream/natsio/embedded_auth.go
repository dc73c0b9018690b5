package natsio

import (
	"crypto/tls"
	"fmt"
	"os"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/dcgpd/dcgpd/config"
)

// EmbeddedAuth is what the embedded server's client listener requires: at
// most one of a token, a user with a password, or an nkey (its public
// key) for the daemon's own connection, which may do everything; other
// users with roles (Users, with the subjects' Prefix); and TLS. The zero
// value requires nothing.
type EmbeddedAuth struct {
	Token    string
	User     string
	Password string
	NKey     string // public user nkey ("U…")
	// Users are the other users, each limited to its role's subjects
	// (permissions.go) under Prefix.
	Users  []config.NATSUser
	Prefix string
	// TLS is the server's TLS configuration (nil: plain TCP); Verify
	// requires client certificates from its ClientCAs.
	TLS    *tls.Config
	Verify bool
}

// none reports whether the listener is open to anyone.
func (a EmbeddedAuth) none() bool {
	return a.Token == "" && a.User == "" && a.NKey == "" && len(a.Users) == 0
}

// apply sets the server options for the listener's authentication,
// permissions and TLS.
func (a EmbeddedAuth) apply(o *server.Options) {
	switch {
	case a.NKey != "":
		o.Nkeys = []*server.NkeyUser{{Nkey: a.NKey}}
	case a.Token != "":
		o.Authorization = a.Token
	case a.User != "" && len(a.Users) == 0:
		o.Username, o.Password = a.User, a.Password
	case a.User != "":
		// nats-server takes a single user or a users list, not both.
		o.Users = []*server.User{{Username: a.User, Password: a.Password}}
	}
	for _, u := range a.Users {
		perm := RolePermissions(u.Role, a.Prefix)
		if u.NKey != "" {
			o.Nkeys = append(o.Nkeys, &server.NkeyUser{Nkey: u.NKey, Permissions: perm})
		} else {
			o.Users = append(o.Users, &server.User{Username: u.Name, Password: u.PasswordHash, Permissions: perm})
		}
	}
	if a.TLS != nil {
		o.TLS, o.TLSConfig, o.TLSVerify, o.TLSTimeout = true, a.TLS, a.Verify, 5
	}
}

// EmbeddedAuthOf derives the embedded server's authentication from the
// [nats] credentials, the same ones the daemon connects with: a token,
// a user and password, or the public key of nkey_file's seed; the
// [[nats.users]] with their roles; and [nats.server_tls], whose files it
// reads. A creds (JWT) file needs an operator the embedded server does
// not have. With no credential, a listener off loopback is refused unless
// open_listen is set; with one, unless TLS is set or insecure_no_tls.
func EmbeddedAuthOf(c *config.NATSConfig) (EmbeddedAuth, error) {
	a := EmbeddedAuth{Token: c.Token, User: c.User, Password: c.Password, Users: c.Users, Prefix: c.Prefix}
	if err := config.CheckEmbeddedListen(c); err != nil {
		return a, err
	}
	for i, u := range c.Users {
		if u.NKey != "" && !nkeys.IsValidPublicUserKey(u.NKey) {
			return a, fmt.Errorf("nats.users[%d].nkey: %q is not a public user nkey (its checksum fails; `nk -gen user -pubout`)", i, u.NKey)
		}
	}
	if c.NKeyFile != "" {
		pub, err := nkeyPublic(c.NKeyFile)
		if err != nil {
			return a, err
		}
		a.NKey = pub
	}
	if st := c.ServerTLS; st.Enabled() {
		conf, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: st.CertFile, KeyFile: st.KeyFile, CaFile: st.CAFile, Verify: st.Verify})
		if err != nil {
			return a, fmt.Errorf("nats.server_tls: %w", err)
		}
		a.TLS, a.Verify = conf, st.Verify
	}
	return a, nil
}

// nkeyPublic reads a user nkey seed file (plain or decorated) and returns
// its public key.
func nkeyPublic(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("nats.nkey_file: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return "", fmt.Errorf("nats.nkey_file %s: not an nkey seed (not shown): %w", path, err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("nats.nkey_file %s: %w", path, err)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("nats.nkey_file %s: the seed is not a user nkey (it must start with SU)", path)
	}
	return pub, nil
}
