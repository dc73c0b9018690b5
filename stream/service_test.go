package stream

import (
	"encoding/json"
	"runtime/debug"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestBuildFrom(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/dcgpd/dcgpd", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "40da87e97e26"},
			{Key: "vcs.time", Value: "2026-11-24T16:20:46Z"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want Build
	}{
		{"stamped", stamped, true, Build{Version: "v0.3.0", Revision: "40da87e97e26", Modified: true, Time: "2026-11-24T16:20:46Z", GoVersion: "go1.26.8"}},
		{"go run, no VCS", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true,
			Build{Version: "(devel)", Revision: "unknown", GoVersion: "go1.26.8"}},
		{"no build info", nil, false, Build{Version: "unknown", Revision: "unknown", GoVersion: "unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildFrom(tc.bi, tc.ok); got != tc.want {
				t.Errorf("buildFrom = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	b := ReadBuild()
	want := map[string]string{"version": b.Version, "revision": b.Revision, "go_version": b.GoVersion}
	for _, f := range fams {
		if f.GetName() != "dcgpd_build_info" {
			continue
		}
		if len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Fatalf("dcgpd_build_info: %v", f)
		}
		got := map[string]string{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(want) {
			t.Fatalf("labels %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("label %s = %q, want %q", k, got[k], v)
			}
		}
		return
	}
	t.Fatal("dcgpd_build_info not registered")
}

// TestStatusReplyCompatible: the status reply keeps Status's fields at the
// top level (old clients decode it unchanged) and adds "build".
func TestStatusReplyCompatible(t *testing.T) {
	rep := StatusReply{Status: Status{Model: "bikes", Products: []string{"a"}, Bins: 3}, Build: Build{Version: "(devel)", Revision: "unknown", GoVersion: "go1.26.8"}}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var old Status
	if err := json.Unmarshal(raw, &old); err != nil || old.Model != "bikes" || old.Bins != 3 || len(old.Products) != 1 {
		t.Fatalf("old Status from %s: %+v, %v", raw, old, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["build"]) != `{"version":"(devel)","revision":"unknown","go_version":"go1.26.8"}` {
		t.Errorf("build = %s", m["build"])
	}
}
