package natsio

import (
	"fmt"
	"os"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/dcgpd/dcgpd/config"
)

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

// EmbeddedAuthOf derives the embedded server's authentication from the
// [nats] credentials, the same ones the daemon connects with: a token,
// a user and password, or the public key of nkey_file's seed. A creds
// (JWT) file needs an operator the embedded server does not have. With
// none, a listener off loopback is refused unless open_listen is set.
func EmbeddedAuthOf(c *config.NATSConfig) (EmbeddedAuth, error) {
	a := EmbeddedAuth{Token: c.Token, User: c.User, Password: c.Password}
	if err := config.CheckEmbeddedListen(c); err != nil {
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
