//go:build unix

package dirlock

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock(2) lock on f without waiting.
func lockFile(f *os.File, _ string) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrLocked
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return err
	}
}

func unlockFile(f *os.File, _ string) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
