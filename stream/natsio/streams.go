package natsio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// Stream and bucket names.
const (
	ObsStream    = "DCGP_OBS"
	LatentStream = "DCGP_LATENT"
	LatestBucket = "dcgp_latest"
)

// SetupStreams creates or binds the input and output streams and the
// latest-estimate bucket.
func SetupStreams(ctx context.Context, js jetstream.JetStream, c *config.NATSConfig) (jetstream.KeyValue, error) {
	dupes := 10 * time.Minute
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: ObsStream, Subjects: []string{c.Prefix + ".obs.>"},
		Storage: jetstream.FileStorage, Replicas: c.Replicas, Duplicates: dupes, MaxMsgSize: wire.MaxMessageBytes}); err != nil {
		return nil, fmt.Errorf("input stream %s: %w", ObsStream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: LatentStream, Subjects: []string{c.Prefix + ".latent.>"},
		Storage: jetstream.FileStorage, Replicas: c.Replicas, Duplicates: dupes, MaxAge: 7 * 24 * time.Hour}); err != nil {
		return nil, fmt.Errorf("output stream %s: %w", LatentStream, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: LatestBucket, History: 1, Replicas: c.Replicas,
		Description: "newest filtered estimate message per model"})
	if err != nil {
		return nil, fmt.Errorf("key-value bucket %s: %w", LatestBucket, err)
	}
	return kv, nil
}

// RetrySetup runs a stream or bucket setup in attempts of at most 3 s
// until it succeeds or ctx ends: on a replicated cluster, instances that
// create the same stream at the same moment can each wait for an answer
// that never comes (measured: three concurrent creates of an R3 stream
// all timed out at 30 s; a second attempt succeeded at once).
func RetrySetup(ctx context.Context, setup func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := setup(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
}

// PullBuffer bounds the input a model's consumer buffers in the client
// by bytes, not messages: the client drops messages past its pending
// limit (64 MiB) as a "slow consumer", and 2,000 whole-bin messages of a
// 2,000-station city are 200 MiB. The server's max_ack_pending still
// bounds their number.
func PullBuffer() jetstream.PullConsumeOpt { return jetstream.PullMaxBytes(16 << 20) }
