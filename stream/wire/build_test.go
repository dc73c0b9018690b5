package wire

import (
	"runtime/debug"
	"testing"
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
