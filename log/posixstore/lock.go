package posixstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/memtrail/memtrail/internal/datadir"
	"github.com/memtrail/memtrail/log/store"
)

// ErrDirInUse is returned by LockDir, Open and OpenCheck (when repairing)
// while another process has the data directory open. It matches
// store.ErrLeaseHeld too.
var ErrDirInUse error = dirInUse{}

type dirInUse struct{}

func (dirInUse) Error() string { return "the data directory is in use by another memtrail process" }

func (dirInUse) Is(target error) bool { return target == store.ErrLeaseHeld }

// A DirLock is one process's exclusive hold on a data directory (the
// kernel's flock on DIR/memtrail.lock), so it goes with the process however
// the process ends: the store.Lease of the embedded storage, which two
// processes must never write at once (they would assign the same indexes
// twice). A caller that writes files of its own into the directory before
// the log opens (memtrail serve writes the log key and the published
// policy) takes the lock first with LockDir and hands it to OpenLocked, so
// that a second process on the same directory fails before it has changed
// anything.
type DirLock struct {
	dir string
	f   *os.File
}

var _ store.Lease = (*DirLock)(nil)

// LockDir takes the lock of the data directory dir, which must exist,
// without waiting: while another process holds it, it fails with an error
// wrapping ErrDirInUse. Release it with Release, or hand it to OpenLocked.
func LockDir(dir string) (*DirLock, error) {
	l, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("posixstore: %w", err)
	}
	return l, nil
}

// lockDir takes the directory's lock without waiting.
func lockDir(dir string) (*DirLock, error) {
	path := filepath.Join(dir, datadir.Lock)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		// A lock needs no write access; the directory's writability is
		// checked, and reported, on its own.
		if f, err = os.Open(path); err != nil {
			return nil, fmt.Errorf("%w: couldn't open lock file: %w", store.ErrStorageUnavailable, err)
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

// Lost returns nil: the kernel holds the lock until Release or the end of
// the process.
func (d *DirLock) Lost() <-chan struct{} { return nil }

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
