package config

import (
	"errors"
	"fmt"
	"net"
)

// ErrOpenListener refuses an embedded server that would accept anyone on
// an address other than loopback.
var ErrOpenListener = errors.New("the embedded NATS server listens off loopback without authentication")

// CheckEmbeddedListen is refuses an embedded server whose [nats] settings would
// take a JWT it cannot check or listen off loopback without credentials;
// it reads no file (Config.Validate and the embedded server both ask it).
func CheckEmbeddedListen(c *NATSConfig) error {
	if c.CredsFile != "" {
		return errors.New("nats.creds_file: the embedded server has no operator to check a JWT; use token, user and password, or nkey_file")
	}
	open := c.Token == "" && c.User == "" && c.NKeyFile == ""
	if open && !c.OpenListen && !LoopbackListen(c.Listen) {
		return fmt.Errorf("nats.listen: %q: %w; set nats.token, nats.user and nats.password, or nats.nkey_file (or nats.open_listen = true to accept that)", c.Listen, ErrOpenListener)
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
