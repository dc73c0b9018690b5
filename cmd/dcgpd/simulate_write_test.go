package main

import (
	"errors"
	"strings"
	"testing"
)

// failingFile accepts limit bytes, then fails every write; Sync and
// Close succeed (as on a filesystem that filled up: the failed writes
// never reach the disk for a sync to report).
type failingFile struct {
	limit, n int
	closed   bool
}

var errFull = errors.New("no space left on device")

func (f *failingFile) Write(p []byte) (int, error) {
	if f.n+len(p) > f.limit {
		return 0, errFull
	}
	f.n += len(p)
	return len(p), nil
}
func (f *failingFile) Sync() error  { return nil }
func (f *failingFile) Close() error { f.closed = true; return nil }

// TestSimulateReportsWriteErrors: a file simulate cannot write whole
// fails the command, naming the file; every file is closed either way.
func TestSimulateReportsWriteErrors(t *testing.T) {
	ds, err := simulateLayout(1, 3, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"products.csv", "obs.csv", "truth.csv"} {
		files := map[string]*failingFile{}
		err := writeClusterFiles(func(name string) (outFile, error) {
			f := &failingFile{limit: 1 << 30}
			if name == bad {
				f.limit = 10
			}
			files[name] = f
			return f, nil
		}, ds)
		if !errors.Is(err, errFull) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s fails: got %v", bad, err)
		}
		for name, f := range files {
			if !f.closed {
				t.Errorf("%s fails: %s left open", bad, name)
			}
		}
	}
	files := map[string]*failingFile{}
	if err := writeClusterFiles(func(name string) (outFile, error) {
		files[name] = &failingFile{limit: 1 << 30}
		return files[name], nil
	}, ds); err != nil || len(files) != 3 || files["obs.csv"].n == 0 {
		t.Fatalf("writes that succeed: %v, files %v", err, files)
	}
}
