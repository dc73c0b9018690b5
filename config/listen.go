package config

import (
	"errors"
	"fmt"
	"net"
)

// ErrOpenListener refuses an embedded server that would accept anyone on
// an address other than loopback.
var ErrOpenListener = errors.New("the embedded NATS server listens off loopback without authentication")

// ErrPlaintextCredentials refuses an embedded server that would take
// credentials, and carry every message, in clear off loopback.
var ErrPlaintextCredentials = errors.New("the embedded NATS server listens off loopback without TLS")

// CheckEmbeddedListen refuses an embedded server whose [nats] settings
// would take a JWT it cannot check, listen off loopback without
// credentials, or listen off loopback with credentials but without TLS;
// it reads no file (Config.Validate and the embedded server both ask it).
func CheckEmbeddedListen(c *NATSConfig) error {
	if c.CredsFile != "" {
		return errors.New("nats.creds_file: the embedded server has no operator to check a JWT; use token, user and password, or nkey_file")
	}
	if LoopbackListen(c.Listen) {
		return nil
	}
	open := c.Token == "" && c.User == "" && c.NKeyFile == "" && len(c.Users) == 0
	if open && !c.OpenListen {
		return fmt.Errorf("nats.listen: %q: %w; set nats.token, nats.user and nats.password, or nats.nkey_file (or nats.open_listen = true to accept that)", c.Listen, ErrOpenListener)
	}
	// An nkey's seed never crosses the wire, but the session and every
	// message still would, in clear: TLS is required for any credential.
	if !open && !c.ServerTLS.Enabled() && !c.InsecureNoTLS {
		return fmt.Errorf("nats.listen: %q: %w (credentials and messages in clear); set nats.server_tls.cert_file and nats.server_tls.key_file (or nats.insecure_no_tls = true where the network itself is encrypted)", c.Listen, ErrPlaintextCredentials)
	}
	return nil
}

// LoopbackListen reports whether a host:port only accepts local
// connections: "localhost" or a loopback IP. An empty host, 0.0.0.0 or
// :: take every interface.
func LoopbackListen(addr string) bool {
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
