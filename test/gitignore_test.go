package test

import (
	"os/exec"
	"testing"
)

// TestQuickStartOutputsIgnored: what the README's quick start writes in
// the repository (the demo's plot, the simulated cluster, the daemon's
// store and snapshots, the saved model and posterior) is ignored by git,
// so a newcomer's tree stays clean.
func TestQuickStartOutputsIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git absent")
	}
	if err := exec.Command("git", "-C", "..", "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	for _, p := range []string{"dcgpd-demo.svg", "sim/obs.csv", "dcgpd-data/snapshots/bikes.snap", "dcgpd-data/jetstream/x", "bikes.model.toml", "bikes.post.csv"} {
		if err := exec.Command("git", "-C", "..", "check-ignore", "-q", p).Run(); err != nil {
			t.Errorf("%s, written by the README's quick start, is not ignored by git", p)
		}
	}
}
