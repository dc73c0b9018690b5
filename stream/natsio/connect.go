package natsio

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
)

// Connect opens a connection to the configured servers, or over loopback
// to an embedded one (over TLS, pinning its certificate, when it serves
// TLS), reconnecting forever; extra options are applied last.
func Connect(c *config.NATSConfig, emb *Embedded, name string, log zerolog.Logger, extra ...nats.Option) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: closed on purpose
				log.Warn().Err(err).Msg("NATS disconnected")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("NATS reconnected")
		}),
	}
	url, urlAuth, err := stripCredentials(c.URL)
	if err != nil {
		return nil, err
	}
	if emb != nil {
		// Over loopback TCP, not in process: an in-process connection is a
		// net.Pipe, unbuffered, and under a 2-million-message replay the
		// server closed it ("read/write on closed pipe") in 3 of 7 runs of
		// BenchmarkEndToEnd/bin/tobit, after which the client never
		// reconnected. Over TCP the socket buffers absorb the bursts, and a
		// dropped connection reconnects like any other.
		url = emb.ClientURL()
	}
	switch {
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	case c.NKeyFile != "":
		o, err := nats.NkeyOptionFromSeed(c.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats.nkey_file %s: %w", c.NKeyFile, err)
		}
		opts = append(opts, o)
	case urlAuth != nil: // as in nats.go, a URL's credentials win over user and token
		opts = append(opts, urlAuth)
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	switch {
	case emb != nil && emb.leaf != nil:
		// The daemon's own server: its certificate, whatever names it
		// carries, is the one to expect on the loopback address.
		opts = append(opts, nats.Secure(pinnedTLS(emb.leaf)))
	case c.TLSCA != "":
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	if c.TLSCert != "" {
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS at %s: %w", redact(url), err)
	}
	return nc, nil
}

// stripCredentials takes the credentials out of a URL list
// (nats://user:pass@host, nats://token@host) and returns them as a
// connection option, so that no URL the connection reports
// (ConnectedUrlRedacted masks a password but not a token) or an error
// names carries a secret. Every URL that has credentials must have the
// same ones.
func stripCredentials(list string) (string, nats.Option, error) {
	if list == "" {
		return "", nil, nil
	}
	parts := strings.Split(list, ",")
	var info *neturl.Userinfo
	for i, p := range parts {
		p = strings.TrimSpace(p)
		full := p
		if !strings.Contains(full, "://") {
			full = "nats://" + full // as nats.go reads a URL without a scheme
		}
		u, err := neturl.Parse(full)
		if err != nil {
			// The parser's error quotes the URL, credentials and all.
			if strings.Contains(p, "@") {
				return "", nil, fmt.Errorf("nats.url: server %d of the list is not a valid URL (not shown: it holds credentials)", i+1)
			}
			return "", nil, fmt.Errorf("nats.url: %w", err)
		}
		if u.User == nil {
			continue
		}
		if info != nil && info.String() != u.User.String() {
			return "", nil, errors.New("nats.url: the servers have different credentials; give them once (nats.user and nats.password, or nats.token)")
		}
		info, u.User = u.User, nil
		parts[i] = u.String()
	}
	list = strings.Join(parts, ",")
	if info == nil {
		return list, nil, nil
	}
	if pass, ok := info.Password(); ok {
		return list, nats.UserInfo(info.Username(), pass), nil
	}
	return list, nats.Token(info.Username()), nil
}

// redact drops passwords from a URL list for error messages.
func redact(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := neturl.Parse(strings.TrimSpace(p)); err == nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// pinnedTLS accepts exactly the server certificate leaf (DER): the chain
// and host name checks are replaced by that comparison.
func pinnedTLS(leaf []byte) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, leaf) {
				return errors.New("the embedded server presented another certificate than its own")
			}
			return nil
		}}
}
