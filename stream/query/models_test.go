package query

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/natstest"
)

// noRunners is a daemon that runs no model of its two.
type noRunners struct{}

func (noRunners) Runner(string) *stream.Runner         { return nil }
func (noRunners) Where(context.Context, string) string { return "" }
func (noRunners) Models() []string                     { return []string{"hub-a", "hub-b"} }

// TestEmptyQueryListsModels: a request naming no model ({}) is answered
// with the configured models on both endpoints; an unknown model is 404.
func TestEmptyQueryListsModels(t *testing.T) {
	_, nc := natstest.Embedded(t)
	svc, err := Start(nc, noRunners{}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	for _, subj := range []string{EstimateSubject, StatusSubject} {
		msg, err := nc.Request(subj, []byte(`{}`), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep ModelsReply
		if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" || json.Unmarshal(msg.Data, &rep) != nil ||
			len(rep.Models) != 2 || rep.Models[0] != "hub-a" || rep.Models[1] != "hub-b" {
			t.Errorf("%s {}: %s %q", subj, code, msg.Data)
		}
		msg, err = nc.Request(subj, []byte(`{"model":"hub-3"}`), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if code := msg.Header.Get("Nats-Service-Error-Code"); code != "404" {
			t.Errorf("%s of an unknown model: code %q, %q", subj, code, msg.Data)
		}
	}
}
