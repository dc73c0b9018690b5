package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrModelConsumed refuses to start a model whose input consumer another
// process is reading: two instances without [cluster] on one NATS server.
var ErrModelConsumed = errors.New("another process consumes the model's input")

// Metadata keys of a model's input consumer naming the process that
// created it.
const (
	holderHostKey = "dcgpd_host"
	holderPIDKey  = "dcgpd_pid"
)

// holderMetadata names this process in the consumers it creates.
func holderMetadata() map[string]string {
	host, _ := os.Hostname()
	return map[string]string{holderHostKey: host, holderPIDKey: strconv.Itoa(os.Getpid())}
}

// consumedElsewhere refuses to replace a model's durable consumer that a
// live subscriber reads: the server keeps a pull request waiting only
// while its requester's connection is there (a killed process's requests
// are dropped with its connection), so waiting requests or a bound push
// subscriber mean another instance serves the model. Replacing the
// consumer would leave that instance silently processing nothing.
func consumedElsewhere(model string, info *jetstream.ConsumerInfo) error {
	if info.NumWaiting == 0 && !info.PushBound {
		return nil
	}
	who := "an unknown process"
	if md := info.Config.Metadata; md[holderPIDKey] != "" {
		who = fmt.Sprintf("pid %s on host %s", md[holderPIDKey], md[holderHostKey])
	}
	return fmt.Errorf("model %s: %w: its consumer %s has %d waiting pull requests, created by %s. "+
		"Two instances without [cluster] cannot serve the same models on one NATS server: stop the other one, "+
		"give this one another nats.prefix, or run both with [cluster] enabled", model, ErrModelConsumed, info.Name, info.NumWaiting, who)
}
