package ocpi

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

type recordConn struct {
	msgs []*nats.Msg
	fail bool
}

func (r *recordConn) PublishMsg(m *nats.Msg) error {
	if r.fail {
		return errors.New("no responders")
	}
	r.msgs = append(r.msgs, m)
	return nil
}

func TestNATSPublisher(t *testing.T) {
	at := time.Date(2024, 5, 6, 8, 2, 11, 0, time.UTC)
	rc := &recordConn{}
	p := NewNATSPublisher(rc, "dcgp", "ev")
	st := []StatusEvent{{Site: "site-north", EVSE: "N-1", Status: StatusCharging, At: at}}
	if err := p.Publish(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if len(rc.msgs) != 1 || rc.msgs[0].Subject != "dcgp.evse.ev" {
		t.Fatalf("messages %v", rc.msgs)
	}
	var m StatusMessage
	if err := json.Unmarshal(rc.msgs[0].Data, &m); err != nil {
		t.Fatal(err)
	}
	if m != (StatusMessage{Schema: 1, Model: "ev", Site: "site-north", EVSE: "N-1", Status: "CHARGING", At: at}) {
		t.Errorf("message %+v", m)
	}
	if id := rc.msgs[0].Header.Get(nats.MsgIdHdr); id != "ev/site-north/N-1/1714982531000000000" {
		t.Errorf("Nats-Msg-Id %q", id)
	}
	rc.fail = true
	if err := p.Publish(context.Background(), st); err == nil {
		t.Error("a failed publish was not an error")
	}
}
