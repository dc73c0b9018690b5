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
	polled := at.Add(time.Minute)
	st := Batch{Polled: polled, Changed: []StatusEvent{{Site: "site-north", EVSE: "N-1", Status: StatusCharging, At: at}},
		Refreshed: []StatusEvent{{Site: "site-north", EVSE: "N-2", Status: StatusAvailable, At: at.Add(-time.Hour)}}}
	if err := p.Publish(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if len(rc.msgs) != 3 || rc.msgs[0].Subject != "dcgp.evse.ev" {
		t.Fatalf("messages %v", rc.msgs)
	}
	for i, want := range []string{"ev/site-north/N-2/1714978931000000000/refresh/1714982591000000000", "ev/poll/1714982591000000000"} {
		if id := rc.msgs[i+1].Header.Get(nats.MsgIdHdr); id != want {
			t.Errorf("message %d: Nats-Msg-Id %q, want %q", i+1, id, want)
		}
	}
	for i, m := range rc.msgs {
		dm, err := DecodeMessage(m.Data)
		if err != nil {
			t.Fatalf("message %d does not decode: %v", i, err)
		}
		if wantKind := map[bool]string{true: KindPoll, false: KindStatus}[i == 2]; dm.Kind != wantKind {
			t.Errorf("message %d: kind %q, want %q", i, dm.Kind, wantKind)
		}
	}
	var poll StatusMessage
	if err := json.Unmarshal(rc.msgs[2].Data, &poll); err != nil || poll != (StatusMessage{Schema: 1, Kind: KindPoll, Model: "ev", At: polled}) {
		t.Errorf("poll marker %+v (%v)", poll, err)
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
