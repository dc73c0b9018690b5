package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestUnexpectedDuplicateOutputCounted: while a daemon runs live, an
// estimate whose id another publisher already stored (as a second
// instance on the same model would) is dropped by the server and counted
// as an unexpected duplicate; the bins before it, new ids, are not.
func TestUnexpectedDuplicateOutputCounted(t *testing.T) {
	c := simulated(t, 2, 1)
	cfg := daemonConfig(t, c, 1)
	model := cfg.Models[0].Name
	r := startDaemon(t, cfg)
	out := collect(t, r.nc, "dcgp.latent."+model)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bins := c.bins
	opts := natsio.ReplayOptions{Width: time.Hour, Watermark: true}
	if _, err := natsio.Replay(ctx, r.js, model, bins[:2], opts); err != nil {
		t.Fatal(err)
	}
	msgs := out.wait(t, "bins 0 and 1", 30*time.Second, func(ms []wire.LatentMessage) bool { return len(ms) >= 2 })
	digest := msgs[0].ModelDigest
	if len(digest) != wire.ModelDigestChars {
		t.Fatalf("model_digest %q", digest)
	}
	// Another process stores bin 2's estimate first, under the id the
	// daemon will give it.
	id := fmt.Sprintf("%s/%d/filtered/0/%s", model, bins[2].Start.Unix(), digest)
	m := &nats.Msg{Subject: "dcgp.latent." + model, Data: []byte(`{}`), Header: nats.Header{}}
	m.Header.Set(nats.MsgIdHdr, id)
	if _, err := r.js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := natsio.Replay(ctx, r.js, model, bins[2:3], opts); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, r.d.HTTPAddr(), `dcgpd_output_duplicates_total{expected="false"}`, 1)
	waitMetric(t, r.d.HTTPAddr(), `dcgpd_output_duplicates_total{expected="true"}`, 0)
}
