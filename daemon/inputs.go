package daemon

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream/natsio"
)

// startStatusInputs starts what feeds the models beside their input
// streams: the [[rebalance]] entries' station status, the [[charging]]
// entries' EVSE status and the GBFS feeds polled in process. It returns
// the status consumers and the function that stops the feeds.
func (d *Daemon) startStatusInputs(ctx context.Context, js jetstream.JetStream, sink *natsio.Publisher) ([]jetstream.ConsumeContext, func(), error) {
	noFeeds := func() {}
	statusCons, err := d.startRebalance(ctx, js, sink)
	if err != nil {
		return statusCons, noFeeds, err
	}
	evseCons, err := d.startCharging(ctx, js, sink)
	statusCons = append(statusCons, evseCons...)
	if err != nil {
		return statusCons, noFeeds, err
	}
	stopFeeds, err := d.startFeeds(ctx, js)
	return statusCons, stopFeeds, err
}
