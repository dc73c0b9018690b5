package main

import (
	"flag"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natsio"
)

// natsURLFlag defines a client command's --nats flag. Left empty it
// resolves (natsURL) to $NATS_URL, the NATS tools' convention, else
// nats://127.0.0.1:4222; the help does not print the environment's value,
// which may carry credentials.
func natsURLFlag(fs *flag.FlagSet) *string {
	return fs.String("nats", "", "NATS server URL(s), comma-separated; credentials may be in the URL (default $NATS_URL, else "+nats.DefaultURL+
		"); TLS and credential files from $NATS_CA, $NATS_CERT, $NATS_KEY, $NATS_CREDS, $NATS_NKEY, $NATS_USER, $NATS_PASSWORD as the nats CLI reads them")
}

// natsURL is the server to connect to: the --nats value, else $NATS_URL,
// else nats://127.0.0.1:4222.
func natsURL(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv("NATS_URL"); v != "" {
		return v
	}
	return nats.DefaultURL
}

// clientNATS is what a client command connects with: the URL, and the
// CA, client certificate and credentials the nats CLI's environment
// variables name.
func clientNATS(url string) config.NATSConfig {
	return config.NATSConfig{URL: url, TLSCA: os.Getenv("NATS_CA"), TLSCert: os.Getenv("NATS_CERT"), TLSKey: os.Getenv("NATS_KEY"),
		CredsFile: os.Getenv("NATS_CREDS"), NKeyFile: os.Getenv("NATS_NKEY"), User: os.Getenv("NATS_USER"), Password: os.Getenv("NATS_PASSWORD")}
}

// connectClient connects a client command (name, as the server lists
// it) to url with clientNATS's TLS and credentials; the error names the
// URL without its credentials.
func connectClient(url, name string, extra ...nats.Option) (*nats.Conn, error) {
	c := clientNATS(url)
	return natsio.Connect(&c, nil, name, zerolog.Nop(), extra...)
}
