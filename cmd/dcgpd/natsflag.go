package main

import (
	"flag"
	"os"

	"github.com/nats-io/nats.go"
)

// natsURLFlag defines a client command's --nats flag. Left empty it
// resolves (natsURL) to $NATS_URL, the NATS tools' convention, else
// nats://127.0.0.1:4222; the help does not print the environment's value,
// which may carry credentials.
func natsURLFlag(fs *flag.FlagSet) *string {
	return fs.String("nats", "", "NATS server URL(s), comma-separated; credentials may be in the URL (default $NATS_URL, else "+nats.DefaultURL+")")
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
