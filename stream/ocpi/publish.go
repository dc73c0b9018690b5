package ocpi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// SchemaVersion is the status message's schema.
const SchemaVersion = 1

// StatusMessage is one EVSE status as published on
// <prefix>.evse.<model>: site is the OCPI location id (the model's
// product), at the status's last_updated.
type StatusMessage struct {
	Schema int       `json:"schema"`
	Model  string    `json:"model"`
	Site   string    `json:"site"`
	EVSE   string    `json:"evse"`
	Status string    `json:"status"`
	At     time.Time `json:"at"`
}

// MsgPublisher is the part of a NATS connection (or JetStream context)
// the publisher needs: *nats.Conn satisfies it.
type MsgPublisher interface {
	PublishMsg(m *nats.Msg) error
}

// NATSPublisher publishes statuses as StatusMessages, one message each,
// with a Nats-Msg-Id header <model>/<site>/<evse>/<unix nanoseconds> so
// a JetStream stream on the subject drops a status published twice.
type NATSPublisher struct {
	Conn    MsgPublisher
	Subject string
	Model   string
}

// NewNATSPublisher publishes on prefix.evse.model.
func NewNATSPublisher(conn MsgPublisher, prefix, model string) *NATSPublisher {
	return &NATSPublisher{Conn: conn, Subject: prefix + ".evse." + model, Model: model}
}

// Publish implements Publisher; it stops at the first failure (the
// poller offers the batch again).
func (p *NATSPublisher) Publish(ctx context.Context, statuses []StatusEvent) error {
	for _, s := range statuses {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := json.Marshal(StatusMessage{Schema: SchemaVersion, Model: p.Model, Site: s.Site, EVSE: s.EVSE, Status: string(s.Status), At: s.At.UTC()})
		if err != nil {
			return fmt.Errorf("encoding the status of %s/%s: %w", s.Site, s.EVSE, err)
		}
		m := nats.NewMsg(p.Subject)
		m.Data = b
		m.Header.Set(nats.MsgIdHdr, p.Model+"/"+s.Site+"/"+s.EVSE+"/"+strconv.FormatInt(s.At.UnixNano(), 10))
		if err := p.Conn.PublishMsg(m); err != nil {
			return fmt.Errorf("publishing the status of %s/%s on %s: %w", s.Site, s.EVSE, p.Subject, err)
		}
	}
	return nil
}
