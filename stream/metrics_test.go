package stream

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dcgpd/dcgpd/stream/wire"
)

func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	b := wire.ReadBuild()
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
