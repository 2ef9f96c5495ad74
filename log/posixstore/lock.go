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

// ErrDirInUse is returned by Open, LockDir, and Fsck when repairing, while
// another process has the data directory open.
var ErrDirInUse = errors.New("the data directory is in use by another memtrail process")

// A DirLock is one process's exclusive hold on a data directory (the
// kernel's flock on DIR/memtrail.lock), so it goes with the process however
// the process ends. Open takes one itself unless Config.Lock hands it one:
// a caller that writes files of its own into the directory before the log
// opens (memtrail serve writes the log key and the published policy)
// takes the lock first with LockDir, so that a second process on the same
// directory fails before it has changed anything.
type DirLock struct {
	dir string
	f   *os.File
}

// LockDir takes the lock of the data directory dir, which must exist,
// without waiting: while another process holds it, it fails with an error
// wrapping ErrDirInUse. Release it with Release, or hand it to Open in
// Config.Lock.
func LockDir(dir string) (*DirLock, error) {
	l, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	return l, nil
}

// lockDir takes the directory's lock without waiting.
func lockDir(dir string) (*DirLock, error) {
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
	return &DirLock{dir: dir, f: f}, nil
}

// Release drops the lock. It is safe to call more than once, and on nil.
func (d *DirLock) Release() {
	if d != nil && d.f != nil {
		d.f.Close() // closing the descriptor drops the lock
		d.f = nil
	}
}

// holds reports whether d is a held lock of dir.
func (d *DirLock) holds(dir string) bool {
	if d == nil || d.f == nil {
		return false
	}
	a, errA := os.Stat(d.dir)
	b, errB := os.Stat(dir)
	return errA == nil && errB == nil && os.SameFile(a, b)
}
