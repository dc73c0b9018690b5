//go:build !unix

package dirlock

import (
	"errors"
	"os"
)

// lockFile, without flock, marks the directory with a second file created
// exclusively (<lock file>.held). It is not released when the process is
// killed: remove the file by hand after a crash.
func lockFile(_ *os.File, path string) error {
	f, err := os.OpenFile(path+".held", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return ErrLocked
	}
	if err != nil {
		return err
	}
	return f.Close()
}

func unlockFile(_ *os.File, path string) error {
	return os.Remove(path + ".held")
}
