package config

import (
	"strings"
	"testing"
	"time"
)

// TestClusterConfig: cluster mode needs snapshots in JetStream and a
// lease of at least 1s; the instance name is a subject-safe token.
func TestClusterConfig(t *testing.T) {
	base := strings.Replace(goodConfig, "[nats]\nlisten = \"127.0.0.1:-1\"\n", "", 1)
	for _, c := range []struct{ toml, want string }{
		{"[cluster]\nenabled = true\n[snapshot]\nstore = \"jetstream\"\n", ""},
		{"[cluster]\nenabled = true\n", "cluster.enabled: needs snapshot.store = \"jetstream\""},
		{"[cluster]\nenabled = true\n[snapshot]\nstore = \"jetstream\"\ndir = \"off\"\n", "cluster.enabled: needs"},
		{"[cluster]\nenabled = true\nlease = \"500ms\"\n[snapshot]\nstore = \"jetstream\"\n", "cluster.lease: must be at least 1s"},
		{"[cluster]\nenabled = true\ninstance = \"a.b\"\n[snapshot]\nstore = \"jetstream\"\n", "cluster.instance: \"a.b\""},
		{"[cluster]\nlease = \"500ms\"\n", ""}, // off: not checked
		{"[snapshot]\nstore = \"s3\"\n", "snapshot.store: \"s3\" is not file or jetstream"},
	} {
		_, err := DecodeConfig([]byte(c.toml + base))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: got %v, want %q", c.toml, err, c.want)
		}
	}
	c := DefaultConfig()
	if c.Cluster.Enabled || c.Cluster.Lease.Duration != 10*time.Second || c.Snapshot.Store != "file" {
		t.Errorf("defaults: %+v, store %q", c.Cluster, c.Snapshot.Store)
	}
}
