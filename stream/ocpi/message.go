package ocpi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Message kinds: a status (one EVSE's status from At on) or a poll
// marker (every location of the endpoint was read at At: the statuses
// published before it are every change up to At).
const (
	KindStatus = "status"
	KindPoll   = "poll"
)

// MaxMessageBytes bounds one status or poll message.
const MaxMessageBytes = 4 << 10

// MessageError is why a status message was refused: Reason is a short
// stable label (a metrics label value), Detail the explanation.
type MessageError struct {
	Reason, Detail string
}

func (e *MessageError) Error() string { return e.Reason + ": " + e.Detail }

// Refusal reasons of DecodeMessage.
const (
	ReasonMsgMalformed = "malformed"
	ReasonMsgSchema    = "schema"
	ReasonMsgTooLarge  = "too_large"
	ReasonMsgValue     = "bad_value"
	ReasonMsgTime      = "bad_time"
)

// earliest and latest bound a message's time: before 2000 or after 2200
// is a clock or encoding error.
var (
	earliest = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	latest   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// DecodeMessage parses and checks one message published on
// <prefix>.evse.<model>: a status (kind "status" or absent) needs a site,
// an EVSE and a valid OCPI status; a poll marker (kind "poll") none of
// them. Both need schema SchemaVersion, a model and a time. A refused
// message is a *MessageError.
func DecodeMessage(data []byte) (*StatusMessage, error) {
	bad := func(reason, format string, a ...any) (*StatusMessage, error) {
		return nil, &MessageError{Reason: reason, Detail: fmt.Sprintf(format, a...)}
	}
	if len(data) > MaxMessageBytes {
		return bad(ReasonMsgTooLarge, "%d bytes, at most %d", len(data), MaxMessageBytes)
	}
	var raw struct {
		Schema *int       `json:"schema"`
		At     *time.Time `json:"at"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return bad(ReasonMsgMalformed, "%v", err)
	}
	var m StatusMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return bad(ReasonMsgMalformed, "%v", err)
	}
	switch {
	case raw.Schema == nil || *raw.Schema != SchemaVersion:
		return bad(ReasonMsgSchema, "schema must be %d", SchemaVersion)
	case m.Model == "":
		return bad(ReasonMsgValue, "no model")
	case raw.At == nil || m.At.Before(earliest) || !m.At.Before(latest):
		return bad(ReasonMsgTime, "at %v is absent or outside 2000..2200", m.At)
	}
	m.At = m.At.UTC()
	switch m.Kind {
	case "", KindStatus:
		m.Kind = KindStatus
		switch {
		case m.Site == "" || m.EVSE == "":
			return bad(ReasonMsgValue, "a status needs a site and an EVSE (site %q, evse %q)", m.Site, m.EVSE)
		case !Status(m.Status).Valid():
			return bad(ReasonMsgValue, "EVSE %q of %q: unknown status %q", m.EVSE, m.Site, m.Status)
		}
	case KindPoll:
		if m.Site != "" || m.EVSE != "" || m.Status != "" {
			return bad(ReasonMsgValue, "a poll marker has no site, EVSE or status")
		}
	default:
		return bad(ReasonMsgValue, "kind %q is not %q or %q", m.Kind, KindStatus, KindPoll)
	}
	return &m, nil
}

// Event is a status message's StatusEvent.
func (m *StatusMessage) Event() StatusEvent {
	return StatusEvent{Site: m.Site, EVSE: m.EVSE, Status: Status(m.Status), At: m.At}
}
