package cluster

import (
	"fmt"
	"testing"
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
