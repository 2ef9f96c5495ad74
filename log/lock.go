package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the file in the data directory that one process at a time
// holds an exclusive lock on: two logs writing one directory would assign
// the same indexes twice.
const lockName = "memtrail.lock"

// ErrDirInUse is returned by Open, and by Fsck when repairing, while
// another process has the data directory open.
var ErrDirInUse = errors.New("the data directory is in use by another memtrail process")

// dirLock is a held lock on a data directory.
type dirLock struct{ f *os.File }

// lockDir takes the directory's lock without waiting. The lock is the
// kernel's (flock), so it goes with the process however it ends.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		// A lock needs no write access; the directory's writability is
		// checked, and reported, on its own.
		if f, err = os.Open(path); err != nil {
			return nil, fmt.Errorf("%w: couldn't open lock file: %w", ErrStorageUnavailable, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s is locked)", ErrDirInUse, path)
		}
		return nil, fmt.Errorf("couldn't lock %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func (d *dirLock) release() {
	if d != nil && d.f != nil {
		d.f.Close() // closing the descriptor drops the lock
		d.f = nil
	}
}
