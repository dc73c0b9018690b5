package test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the measured figures under testdata/golden/ instead of
// comparing them (go test ./test/ -run TestLong… -args -update, in long
// mode). CI runs its long mode with it and prints the files' diff, so a
// figure that moved is one reviewed diff of one file.
var update = flag.Bool("update", false, "rewrite the measured figures under testdata/golden/")

// goldenDir holds one file of measured figures per real-data test (or
// subtest): the record the README and docs link instead of copying
// numbers. The tests assert requirements; these files are not
// assertions.
const goldenDir = "testdata/golden"

// goldenPath is the file of test name's figures: its name with each "/"
// of a subtest a folder.
func goldenPath(name string) string {
	return filepath.Join(goldenDir, filepath.FromSlash(name)+".golden")
}

// recordFigures records the figures t measured (text, with the command
// that measures them in its first lines) in goldenPath(t.Name()): with
// -update it rewrites the file; without, it compares and logs, without
// failing, where the file is missing or differs, so that a better result
// never fails a test. Requirements are asserted by the tests themselves.
func recordFigures(t *testing.T, text string) {
	t.Helper()
	path := goldenPath(t.Name())
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
		t.Logf("golden: wrote %s", path)
		return
	}
	old, err := os.ReadFile(path)
	switch {
	case err != nil:
		t.Logf("golden: no record of these figures (%v); -args -update writes %s", err, path)
	case string(old) != text:
		t.Logf("golden: the figures differ from %s (review the diff that -args -update writes):\n%s", path, lineDiff(string(old), text))
	default:
		t.Logf("golden: the figures equal %s", path)
	}
}

// lineDiff lists the lines of want and got that differ, position by
// position ("-" recorded, "+" measured): enough to see which figure moved.
func lineDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			out.WriteString("- " + x + "\n+ " + y + "\n")
		}
	}
	return out.String()
}

// TestGoldenDiff: lineDiff names exactly the lines that moved, and a
// subtest's record is a file in its test's folder.
func TestGoldenDiff(t *testing.T) {
	got := lineDiff("a\nb 1.0\nc", "a\nb 0.9\nc\nd")
	want := "- b 1.0\n+ b 0.9\n- \n+ d\n"
	if got != want {
		t.Errorf("lineDiff = %q, want %q", got, want)
	}
	if p := goldenPath("TestX/sub-1"); p != filepath.Join("testdata", "golden", "TestX", "sub-1.golden") {
		t.Errorf("goldenPath = %q", p)
	}
}
