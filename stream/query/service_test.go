package query

import (
	"encoding/json"
	"testing"

	"github.com/dcgpd/dcgpd/stream"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// TestStatusReplyCompatible: the status reply keeps Status's fields at the
// top level (old clients decode it unchanged) and adds "build".
func TestStatusReplyCompatible(t *testing.T) {
	rep := StatusReply{Status: stream.Status{Model: "bikes", Products: []string{"a"}, Bins: 3}, Build: wire.Build{Version: "(devel)", Revision: "unknown", GoVersion: "go1.26.8"}}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var old stream.Status
	if err := json.Unmarshal(raw, &old); err != nil || old.Model != "bikes" || old.Bins != 3 || len(old.Products) != 1 {
		t.Fatalf("old stream.Status from %s: %+v, %v", raw, old, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["build"]) != `{"version":"(devel)","revision":"unknown","go_version":"go1.26.8"}` {
		t.Errorf("build = %s", m["build"])
	}
}
