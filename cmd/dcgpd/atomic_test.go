package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileAtomic: the new content replaces the old whole, with the
// permissions asked and no temporary file left; when the file cannot be
// replaced, the old one stays and no temporary file is left either.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.model.toml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(p, []byte("new content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "new content" {
		t.Fatalf("content %q, %v", b, err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	// A path that is a non-empty directory cannot be replaced.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(blocked, []byte("new"), 0o644); err == nil {
		t.Fatal("replaced a non-empty directory")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("left %v, want m.model.toml and blocked only", names)
	}
}
