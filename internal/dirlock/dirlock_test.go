package dirlock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAcquireRefusesSecondHolder: a directory locked once is refused to
// a second Acquire (as flock refuses a second open file description, so
// it holds between processes too, checked by TestLockHeldByAnotherProcess)
// with ErrLocked naming the holder's pid; released, it is taken again.
func TestAcquireRefusesSecondHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snapshots")
	first, err := Acquire(dir, "snapshot.dir")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir, "snapshot.dir")
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "held by pid "+strconv.Itoa(os.Getpid())) ||
		!strings.Contains(err.Error(), "snapshot.dir "+dir) {
		t.Fatalf("second Acquire: %v; want ErrLocked naming snapshot.dir and pid %d", err, os.Getpid())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(dir, "snapshot.dir")
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	_ = again.Release()
}

// TestLockHeldByAnotherProcess runs this test binary as a child that
// tries the directory the parent holds: it must be refused.
func TestLockHeldByAnotherProcess(t *testing.T) {
	if dir := os.Getenv("DIRLOCK_CHILD_DIR"); dir != "" {
		_, err := Acquire(dir, "nats.store_dir")
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("child: %v, want ErrLocked", err)
		}
		if !strings.Contains(err.Error(), "held by pid "+os.Getenv("DIRLOCK_PARENT_PID")) {
			t.Fatalf("child: %v does not name the parent's pid", err)
		}
		return
	}
	dir := t.TempDir()
	l, err := Acquire(dir, "nats.store_dir")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release() }()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHeldByAnotherProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DIRLOCK_CHILD_DIR="+dir, "DIRLOCK_PARENT_PID="+strconv.Itoa(os.Getpid()))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
