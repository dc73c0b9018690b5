package ocpi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SchemaVersion is the status message's schema.
const SchemaVersion = 1

// StatusMessage is one message on <prefix>.evse.<model>. A status
// (Kind "status"): site is the OCPI location id (the model's product), at
// the status's last_updated. A poll marker (Kind "poll", no site, EVSE
// or status): every location was read in a poll that began at At, and
// every status that changed up to then was published before it.
type StatusMessage struct {
	Schema int       `json:"schema"`
	Kind   string    `json:"kind,omitempty"`
	Model  string    `json:"model"`
	Site   string    `json:"site,omitempty"`
	EVSE   string    `json:"evse,omitempty"`
	Status string    `json:"status,omitempty"`
	At     time.Time `json:"at"`
}

// MsgPublisher is the part of a NATS connection (or JetStream context)
// the publisher needs: *nats.Conn satisfies it.
type MsgPublisher interface {
	PublishMsg(m *nats.Msg) error
}

// NATSPublisher publishes a poll's statuses as StatusMessages, one
// message each, then its poll marker. A changed status has the
// Nats-Msg-Id <model>/<site>/<evse>/<at, Unix ns>, so a JetStream stream
// drops one published twice; a refreshed one adds /refresh/<poll, Unix
// ns>, the marker is <model>/poll/<poll, Unix ns>.
//
// With JS set every message waits for a stream's acknowledgement, so a
// status no stream stored fails the poll and is offered again at the
// next one; with Conn alone (core NATS) a message nobody stores is lost
// unnoticed.
type NATSPublisher struct {
	Conn    MsgPublisher
	JS      jetstream.JetStream
	Subject string
	Model   string
}

// NewNATSPublisher publishes on prefix.evse.model.
func NewNATSPublisher(conn MsgPublisher, prefix, model string) *NATSPublisher {
	return &NATSPublisher{Conn: conn, Subject: prefix + ".evse." + model, Model: model}
}

// Publish implements Publisher; it stops at the first failure (the
// poller offers the batch again).
func (p *NATSPublisher) Publish(ctx context.Context, b Batch) error {
	polled := strconv.FormatInt(b.Polled.UnixNano(), 10)
	send := func(m StatusMessage, id string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding the %s message of %s/%s: %w", m.Kind, m.Site, m.EVSE, err)
		}
		msg := nats.NewMsg(p.Subject)
		msg.Data = data
		msg.Header.Set(nats.MsgIdHdr, id)
		if p.JS != nil {
			_, err = p.JS.PublishMsg(ctx, msg)
		} else {
			err = p.Conn.PublishMsg(msg)
		}
		if err != nil {
			return fmt.Errorf("publishing the %s message of %s/%s on %s: %w", m.Kind, m.Site, m.EVSE, p.Subject, err)
		}
		return nil
	}
	status := func(s StatusEvent, suffix string) error {
		return send(StatusMessage{Schema: SchemaVersion, Model: p.Model, Site: s.Site, EVSE: s.EVSE, Status: string(s.Status), At: s.At.UTC()},
			p.Model+"/"+s.Site+"/"+s.EVSE+"/"+strconv.FormatInt(s.At.UnixNano(), 10)+suffix)
	}
	for _, s := range b.Changed {
		if err := status(s, ""); err != nil {
			return err
		}
	}
	for _, s := range b.Refreshed {
		if err := status(s, "/refresh/"+polled); err != nil {
			return err
		}
	}
	return send(StatusMessage{Schema: SchemaVersion, Kind: KindPoll, Model: p.Model, At: b.Polled.UTC()}, p.Model+"/poll/"+polled)
}
