package page

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/natstest"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestBackfillOutlivesFirstRequest: the first request for a model's page
// is cut off before the backfill can read anything (a closed tab); a
// later viewer still gets the stored filtered estimates, because the
// backfill belongs to the page, not to that request. A backfill that
// fails (the output stream not there yet) is tried again by a later
// request. Before, the first request's cancellation ended the backfill
// for good and every later viewer lacked the filtered series.
func TestBackfillOutlivesFirstRequest(t *testing.T) {
	for _, tc := range []struct {
		name          string
		streamsBefore bool // the streams exist when the first request comes
	}{
		{"first request cut off", true},
		{"first backfill fails", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, nc := natstest.Embedded(t)
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			bin := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
			store := func() {
				if _, err := natsio.SetupStreams(ctx, js, &config.NATSConfig{Prefix: "dcgp", Replicas: 1}); err != nil {
					t.Fatal(err)
				}
				msg := wire.LatentMessage{Schema: wire.SchemaVersion, Model: "m1", Kind: wire.KindFiltered, BinStart: bin, BinEnd: bin.Add(time.Hour),
					Estimates: []wire.Estimate{{Product: "a", Mean: 4.5}}}
				if _, err := js.Publish(ctx, "dcgp.latent.m1", wire.MarshalLatent(&msg)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.streamsBefore {
				store()
			}
			src := newMovingSource(t)
			src.own("m1", true)
			pctx, stopPage := context.WithCancel(context.Background())
			rec := newPageRecorder(src, Options{NC: nc, Prefix: "dcgp", Log: zerolog.Nop(), Context: pctx})
			defer func() {
				stopPage()
				rec.wg.Wait()
			}()
			if !rec.start() {
				t.Fatal("recorder not started")
			}
			gone, hangUp := context.WithCancel(context.Background())
			hangUp()
			if _, ok := rec.model(gone, "m1"); !ok {
				t.Fatal("m1 not served")
			}
			if !tc.streamsBefore {
				rec.mu.Lock()
				f := rec.fills["m1"]
				rec.mu.Unlock()
				<-f.done // every attempt failed: no stream
				store()
			}
			m, ok := rec.model(ctx, "m1")
			if !ok {
				t.Fatal("m1 not served")
			}
			var got *float64
			for _, b := range m.Products[0].Bins {
				if b.BinStart.Equal(bin) && b.Filtered != nil {
					got = &b.Filtered.Mean
				}
			}
			if got == nil || *got != 4.5 {
				t.Fatalf("a later viewer's chart lacks the stored filtered estimate of %v (got %v): %+v", bin, got, m.Products[0].Bins)
			}
		})
	}
}
