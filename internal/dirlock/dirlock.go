// Package dirlock takes an exclusive lock on a directory for the life of
// a process, so that a second process configured with the same directory
// refuses to start instead of sharing or overwriting what the first one
// writes there. The lock is a file, LockFile, in the directory holding
// the holder's process id; on Linux and the other Unix systems it is an
// flock(2) lock, released by the kernel when the process ends, however it
// ends.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the lock's file name inside the directory.
const LockFile = ".dcgpd.lock"

// ErrLocked reports a directory another process holds.
var ErrLocked = errors.New("directory in use by another process")

// Lock is a held directory lock.
type Lock struct {
	f    *os.File
	path string
}

// Acquire creates dir (if needed) and locks it, writing this process's id
// into its lock file. what names the directory's role in errors (for
// instance "snapshot.dir"). A directory another process holds is refused
// with ErrLocked, naming that process's id.
func Acquire(dir, what string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s %s: lock file: %w", what, dir, err)
	}
	if err := lockFile(f, path); err != nil {
		_ = f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%s %s: %w: held by pid %s (lock file %s); stop that process, or give this one other directories",
				what, dir, ErrLocked, holder(path), path)
		}
		return nil, fmt.Errorf("%s %s: locking %s: %w", what, dir, path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f, path: path}, nil
}

// holder is the process id a lock file names ("unknown" if none).
func holder(path string) string {
	data, err := os.ReadFile(path)
	if pid := strings.TrimSpace(string(data)); err == nil && pid != "" {
		return pid
	}
	return "unknown"
}

// Release gives the directory up. The lock file stays (removing it would
// let a process that opened it already lock a file no longer there).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlockFile(l.f, l.path)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
