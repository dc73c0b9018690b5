package stream

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// ErrOpenListener refuses an embedded server that would accept anyone on
// an address other than loopback.
var ErrOpenListener = errors.New("the embedded NATS server listens off loopback without authentication")

// EmbeddedAuth is what the embedded server's client listener requires: at
// most one of a token, a user with a password, or an nkey (its public
// key). The zero value requires nothing.
type EmbeddedAuth struct {
	Token    string
	User     string
	Password string
	NKey     string // public user nkey ("U…")
}

// none reports whether the listener is open to anyone.
func (a EmbeddedAuth) none() bool { return a.Token == "" && a.User == "" && a.NKey == "" }

// apply sets the server options for the listener's authentication.
func (a EmbeddedAuth) apply(o *server.Options) {
	switch {
	case a.NKey != "":
		o.Nkeys = []*server.NkeyUser{{Nkey: a.NKey}}
	case a.Token != "":
		o.Authorization = a.Token
	case a.User != "":
		o.Username, o.Password = a.User, a.Password
	}
}

// embeddedAuth derives the embedded server's authentication from the
// [nats] credentials, the same ones the daemon connects with: a token,
// a user and password, or the public key of nkey_file's seed. A creds
// (JWT) file needs an operator the embedded server does not have. With
// none, a listener off loopback is refused unless open_listen is set.
func embeddedAuth(c *NATSConfig) (EmbeddedAuth, error) {
	a := EmbeddedAuth{Token: c.Token, User: c.User, Password: c.Password}
	if err := checkEmbeddedListen(c); err != nil {
		return a, err
	}
	if c.NKeyFile != "" {
		pub, err := nkeyPublic(c.NKeyFile)
		if err != nil {
			return a, err
		}
		a.NKey = pub
	}
	return a, nil
}

// checkEmbeddedListen is the part of embeddedAuth that reads no file, for
// Config.Validate.
func checkEmbeddedListen(c *NATSConfig) error {
	if c.CredsFile != "" {
		return errors.New("nats.creds_file: the embedded server has no operator to check a JWT; use token, user and password, or nkey_file")
	}
	open := c.Token == "" && c.User == "" && c.NKeyFile == ""
	if open && !c.OpenListen && !loopbackListen(c.Listen) {
		return fmt.Errorf("nats.listen: %q: %w; set nats.token, nats.user and nats.password, or nats.nkey_file (or nats.open_listen = true to accept that)", c.Listen, ErrOpenListener)
	}
	return nil
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

// loopbackListen reports whether a host:port only accepts local
// connections: "localhost" or a loopback IP. An empty host, 0.0.0.0 or
// :: take every interface.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
