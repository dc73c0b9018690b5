package stream

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAssignSpreads: every model is assigned, loads differ by at most
// one, and removing a member moves at most twice the models it held.
func TestAssignSpreads(t *testing.T) {
	for _, c := range []struct{ models, members int }{{12, 3}, {6, 3}, {7, 3}, {12, 2}, {5, 1}, {3, 5}} {
		var models, members []string
		for i := range c.models {
			models = append(models, fmt.Sprintf("model%d", i))
		}
		for i := range c.members {
			members = append(members, fmt.Sprintf("host-%d", 1000+i*37))
		}
		a := assign(models, members)
		load := map[string]int{}
		for _, m := range models {
			if a[m] == "" {
				t.Fatalf("%v: %s unassigned", c, m)
			}
			load[a[m]]++
		}
		lo, hi := c.models, 0
		for _, mem := range members {
			lo, hi = min(lo, load[mem]), max(hi, load[mem])
		}
		if hi-lo > 1 {
			t.Errorf("%v: loads %v", c, load)
		}
		if c.members < 2 {
			continue
		}
		b := assign(models, members[1:])
		moved := 0
		for _, m := range models {
			if a[m] != members[0] && b[m] != a[m] {
				moved++
			}
		}
		if moved > load[members[0]] {
			t.Errorf("%v: %d models of staying members moved (the leaver held %d)", c, moved, load[members[0]])
		}
	}
}

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
