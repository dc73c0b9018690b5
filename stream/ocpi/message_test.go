package ocpi

import (
	"errors"
	"testing"
	"time"
)

// messageCases are status and poll messages, good and bad: reason "" is
// accepted.
var messageCases = []struct {
	name, data, reason string
}{
	{"status", `{"schema":1,"model":"ev","site":"s","evse":"e","status":"CHARGING","at":"2024-05-06T08:02:11Z"}`, ""},
	{"status kind", `{"schema":1,"kind":"status","model":"ev","site":"s","evse":"e","status":"AVAILABLE","at":"2024-05-06T08:02:11+02:00"}`, ""},
	{"poll", `{"schema":1,"kind":"poll","model":"ev","at":"2024-05-06T08:02:11Z"}`, ""},
	{"not json", `{"schema":1,`, ReasonMsgMalformed},
	{"unknown field", `{"schema":1,"model":"ev","site":"s","evse":"e","status":"CHARGING","at":"2024-05-06T08:02:11Z","x":1}`, ReasonMsgMalformed},
	{"no schema", `{"model":"ev","site":"s","evse":"e","status":"CHARGING","at":"2024-05-06T08:02:11Z"}`, ReasonMsgSchema},
	{"schema 2", `{"schema":2,"model":"ev","site":"s","evse":"e","status":"CHARGING","at":"2024-05-06T08:02:11Z"}`, ReasonMsgSchema},
	{"no model", `{"schema":1,"site":"s","evse":"e","status":"CHARGING","at":"2024-05-06T08:02:11Z"}`, ReasonMsgValue},
	{"no time", `{"schema":1,"model":"ev","site":"s","evse":"e","status":"CHARGING"}`, ReasonMsgTime},
	{"year 1", `{"schema":1,"model":"ev","site":"s","evse":"e","status":"CHARGING","at":"0001-01-01T00:00:00Z"}`, ReasonMsgTime},
	{"no site", `{"schema":1,"model":"ev","evse":"e","status":"CHARGING","at":"2024-05-06T08:02:11Z"}`, ReasonMsgValue},
	{"no evse", `{"schema":1,"model":"ev","site":"s","status":"CHARGING","at":"2024-05-06T08:02:11Z"}`, ReasonMsgValue},
	{"bad status", `{"schema":1,"model":"ev","site":"s","evse":"e","status":"FREE","at":"2024-05-06T08:02:11Z"}`, ReasonMsgValue},
	{"poll with site", `{"schema":1,"kind":"poll","model":"ev","site":"s","at":"2024-05-06T08:02:11Z"}`, ReasonMsgValue},
	{"bad kind", `{"schema":1,"kind":"ping","model":"ev","at":"2024-05-06T08:02:11Z"}`, ReasonMsgValue},
}

func TestDecodeMessage(t *testing.T) {
	for _, c := range messageCases {
		t.Run(c.name, func(t *testing.T) {
			m, err := DecodeMessage([]byte(c.data))
			var me *MessageError
			switch {
			case c.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.reason != "" && (!errors.As(err, &me) || me.Reason != c.reason):
				t.Fatalf("error %v, want reason %s", err, c.reason)
			case c.reason == "" && (m.At.Location() != time.UTC || m.Kind == ""):
				t.Errorf("accepted %+v: time not in UTC or no kind", m)
			}
		})
	}
	big := make([]byte, MaxMessageBytes+1)
	if _, err := DecodeMessage(big); err == nil {
		t.Error("an oversized message was accepted")
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, c := range messageCases {
		f.Add([]byte(c.data))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		if err != nil {
			var me *MessageError
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not a *MessageError", err)
			}
			return
		}
		switch m.Kind {
		case KindStatus:
			if m.Site == "" || m.EVSE == "" || !Status(m.Status).Valid() {
				t.Fatalf("accepted a bad status %+v", m)
			}
		case KindPoll:
			if m.Site != "" || m.EVSE != "" || m.Status != "" {
				t.Fatalf("accepted a bad poll marker %+v", m)
			}
		default:
			t.Fatalf("accepted kind %q", m.Kind)
		}
		if m.Model == "" || m.At.Before(earliest) || !m.At.Before(latest) {
			t.Fatalf("accepted %+v", m)
		}
	})
}
